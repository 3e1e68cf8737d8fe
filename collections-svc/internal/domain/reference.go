package domain

import "strings"

// A case reference is "DC-" and six characters of Crockford's base32 alphabet in upper case
// (no I, L, O or U, so it survives being read out over the phone): about a billion values,
// unique per account and mode (a unique index; a taken one is drawn again).
const (
	ReferencePrefix   = "DC-"
	ReferenceChars    = 6
	ReferenceAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
)

// NewReference makes a reference from random bytes (at least ReferenceChars of them).
func NewReference(random []byte) string {
	b := make([]byte, 0, len(ReferencePrefix)+ReferenceChars)
	b = append(b, ReferencePrefix...)
	// 32 divides 256: every character is equally likely.
	for _, r := range random[:ReferenceChars] {
		b = append(b, ReferenceAlphabet[int(r)%len(ReferenceAlphabet)])
	}
	return string(b)
}

// ParseReference returns the reference a client typed in its canonical form (upper case), and
// false when it cannot be one: such a reference names no case, without asking the store.
func ParseReference(s string) (string, bool) {
	if len(s) != len(ReferencePrefix)+ReferenceChars {
		return "", false
	}
	u := strings.ToUpper(s)
	if !strings.HasPrefix(u, ReferencePrefix) {
		return "", false
	}
	for i := len(ReferencePrefix); i < len(u); i++ {
		if strings.IndexByte(ReferenceAlphabet, u[i]) < 0 {
			return "", false
		}
	}
	return u, true
}
