package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unsafe"

	"rentalplatform/libs/ids"
)

// Secret prefixes. The prefix is part of the hashed secret, so a test secret can never
// authenticate as a live one, nor a restricted secret as a full one.
const (
	TestSecretPrefix           = "sk_test_"
	LiveSecretPrefix           = "sk_live_"
	TestRestrictedSecretPrefix = "rk_test_"
	LiveRestrictedSecretPrefix = "rk_live_"
)

const (
	// secretBytes is the randomness of a generated secret.
	secretBytes = 32
	// SecretChars is the length of a generated secret's body: 32 random bytes' worth of base62
	// (letters and digits, libs/ids.Secret) is 43 characters (43 × log2 62 ≈ 256.03 bits). It
	// is also the only form a secret may be imported in (NewKey).
	SecretChars = 43
	// What authentication looks up: any base64url body of 32 to 128 characters. Wider than
	// the generated form because imports once accepted it, and a key imported then must keep
	// working; whether a key with the secret exists is the repository's business anyway. The
	// upper bound keeps a hostile Authorization header from costing more than one hash.
	lookupMinChars = 32
	lookupMaxChars = 128
)

// Hash is the SHA-256 of a secret, the only form in which a secret is stored. A fast hash is
// right here: the secret is 32 random bytes, not a password, so there is nothing to stretch.
type Hash [sha256.Size]byte

// HashSecret returns the hash under which the key with this secret is stored.
func HashSecret(secret string) Hash {
	// Read in place: a copy of the secret would be one allocation per request.
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(secret), len(secret)))
}

// String returns the hash in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash reads a hash written by String.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return Hash{}, fmt.Errorf("key hash: want %d hex characters, got %d", 2*len(h), len(s))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return Hash{}, fmt.Errorf("key hash: %w", err)
	}
	return h, nil
}

// SecretPrefix returns the prefix of secrets of the given type and mode.
func SecretPrefix(t KeyType, livemode bool) string {
	switch {
	case t == KeyRestricted && livemode:
		return LiveRestrictedSecretPrefix
	case t == KeyRestricted:
		return TestRestrictedSecretPrefix
	case livemode:
		return LiveSecretPrefix
	}
	return TestSecretPrefix
}

// NewSecret returns a fresh random secret for a key of the given type and mode.
func NewSecret(t KeyType, livemode bool) string {
	return ids.Secret(SecretPrefix(t, livemode), secretBytes)
}

// ParseGeneratedSecret reports whether s has the form of a generated secret (a prefix and
// SecretChars letters and digits) and, if so, the type and mode of its key. Imported secrets
// must have it.
func ParseGeneratedSecret(s string) (t KeyType, livemode bool, ok bool) {
	t, livemode, ok = ParseSecret(s)
	if !ok {
		return "", false, false
	}
	body := s[len(SecretPrefix(t, livemode)):]
	if len(body) != SecretChars {
		return "", false, false
	}
	for _, c := range []byte(body) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return "", false, false
		}
	}
	return t, livemode, true
}

// ParseSecret reports whether s has the shape of a secret worth looking up (a prefix and 32 to
// 128 base64url characters: every generated secret, and any imported before imports had to
// be in the generated form) and, if so, the type and mode of its key. Shape only: whether a
// key with this secret exists is the repository's business.
func ParseSecret(s string) (t KeyType, livemode bool, ok bool) {
	var body string
	for _, p := range []struct {
		prefix string
		t      KeyType
		live   bool
	}{
		{TestSecretPrefix, KeySecret, false},
		{LiveSecretPrefix, KeySecret, true},
		{TestRestrictedSecretPrefix, KeyRestricted, false},
		{LiveRestrictedSecretPrefix, KeyRestricted, true},
	} {
		if len(s) > len(p.prefix) && s[:len(p.prefix)] == p.prefix {
			body, t, livemode = s[len(p.prefix):], p.t, p.live
			break
		}
	}
	if body == "" || len(body) < lookupMinChars || len(body) > lookupMaxChars {
		return "", false, false
	}
	for _, c := range []byte(body) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", false, false
		}
	}
	return t, livemode, true
}
