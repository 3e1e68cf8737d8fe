// Package ids makes the platform's prefixed identifiers and secrets.
//
// Object ids are time-ordered so that sorting by id is sorting by creation time: the id doubles
// as the pagination cursor and the MongoDB _id, and newest-first lists need no second index.
package ids

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Prefixes of the platform's object ids.
const (
	APIKey              = "key_"
	Account             = "acct_"
	Request             = "req_"
	VerificationSession = "vs_"
	VerificationReport  = "vr_"
	CollectionCase      = "dc_"
	PaymentRequest      = "preq_"
	PaymentAgreement    = "pa_"
	PaymentMethod       = "pm_"
	Charge              = "ch_"
	WebhookEndpoint     = "we_"
	Event               = "evt_"
	File                = "file_"
	DebtPayment         = "dpay_"
)

// crockford is Crockford's base32 alphabet in lower case. It is in ASCII order, so the
// fixed-width encoding of a larger number sorts after a smaller one.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// EncodedLen is the length of the part after the prefix.
const EncodedLen = 26

// Generator makes monotonic ids: within one millisecond the random part is incremented, so ids
// made by one process never go backwards even when the clock does not move.
type Generator struct {
	mu      sync.Mutex
	now     func() time.Time
	lastMS  uint64
	lastRnd [10]byte
}

// NewGenerator returns a generator using now as its clock (time.Now when nil).
func NewGenerator(now func() time.Time) *Generator {
	if now == nil {
		now = time.Now
	}
	return &Generator{now: now}
}

// New returns prefix followed by 26 characters: 48 bits of Unix milliseconds and 80 bits of
// randomness, Crockford base32.
func (g *Generator) New(prefix string) string {
	var buf [32 + EncodedLen]byte
	return string(g.Append(buf[:0], prefix))
}

// Append appends a new id (New) to dst.
func (g *Generator) Append(dst []byte, prefix string) []byte {
	dst = append(dst, prefix...)
	return appendEncoded(dst, g.next())
}

// next returns the 16 bytes of a new id: 48 bits of Unix milliseconds, then 80 bits that are
// random for a new millisecond and the previous id's plus one within the same one, so ids of
// one generator sort in the order they were made.
func (g *Generator) next() (b [16]byte) {
	// The clock is read before the lock, which then guards only the comparison: every request
	// of the gateway takes an id here.
	ms := uint64(g.now().UnixMilli())
	g.mu.Lock()
	if ms <= g.lastMS {
		ms = g.lastMS
		increment(&g.lastRnd)
	} else {
		g.lastMS = ms
		mustRead(g.lastRnd[:])
	}
	rnd := g.lastRnd
	g.mu.Unlock()

	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], rnd[:])
	return b
}

// Derived returns an id of the generated form (New's) for an object that has an identity but
// no stored id: the time digits of at (the object's creation, so it sorts with its peers), then
// 80 bits of the SHA-256 of key. The same prefix, time and key give the same id every time.
func Derived(prefix string, at time.Time, key []byte) string {
	var b [16]byte
	ms := uint64(at.UnixMilli())
	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	sum := sha256.Sum256(key)
	copy(b[6:], sum[:10])
	return string(appendEncoded([]byte(prefix), b))
}

// increment adds one to a big-endian number; on the (astronomically unlikely) overflow it
// wraps, which only loses monotonicity inside that one millisecond.
func increment(r *[10]byte) {
	for i := len(r) - 1; i >= 0; i-- {
		r[i]++
		if r[i] != 0 {
			return
		}
	}
}

// appendEncoded appends 128 bits as 26 base32 digits (the top digit carries 3 bits).
func appendEncoded(dst []byte, b [16]byte) []byte {
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	var out [EncodedLen]byte
	for i := EncodedLen - 1; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return append(dst, out[:]...)
}

// Time returns the creation time encoded in an id made by New, or false if id does not carry
// one after the prefix.
func Time(prefix, id string) (time.Time, bool) {
	if len(id) != len(prefix)+EncodedLen || id[:len(prefix)] != prefix {
		return time.Time{}, false
	}
	var ms uint64
	// The first 10 digits hold exactly the 48 timestamp bits (3 + 9×5).
	for _, c := range []byte(id[len(prefix) : len(prefix)+10]) {
		v := decodeDigit(c)
		if v < 0 {
			return time.Time{}, false
		}
		ms = ms<<5 | uint64(v)
	}
	return time.UnixMilli(int64(ms)), true
}

// Valid reports whether id is prefix followed by a well-formed encoded part.
func Valid(prefix, id string) bool {
	if len(id) != len(prefix)+EncodedLen || id[:len(prefix)] != prefix {
		return false
	}
	for _, c := range []byte(id[len(prefix):]) {
		if decodeDigit(c) < 0 {
			return false
		}
	}
	return true
}

func decodeDigit(c byte) int {
	for i := 0; i < len(crockford); i++ {
		if crockford[i] == c {
			return i
		}
	}
	return -1
}

// NewUUIDv7 returns prefix followed by a version-7 UUID in its canonical text form. The text
// form of UUIDv7 also sorts by time.
func (g *Generator) NewUUIDv7(prefix string) string {
	b := g.next()
	b[6] = 0x70 | b[6]&0x0f // version 7
	b[8] = 0x80 | b[8]&0x3f // RFC 9562 variant
	return fmt.Sprintf("%s%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ValidUUIDv7 reports whether id is prefix followed by a version-7 UUID in the canonical lower-case
// text form NewUUIDv7 makes, so a malformed id is answered without a store lookup.
func ValidUUIDv7(prefix, id string) bool {
	const uuidLen = 36
	if len(id) != len(prefix)+uuidLen || id[:len(prefix)] != prefix {
		return false
	}
	u := id[len(prefix):]
	for i := 0; i < uuidLen; i++ {
		c := u[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return u[14] == '7' && strings.IndexByte("89ab", u[19]) >= 0
}

// base62 is letters and digits only, so a secret is selected whole by a double click and needs
// no escaping in a shell, a URL or a config file.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Secret returns prefix followed by at least n random bytes' worth of base62 characters
// (API keys). Each character is drawn uniformly by rejection sampling, so no character is more
// likely than another.
func Secret(prefix string, n int) string {
	chars := (n*8*1000 + 5953) / 5954 // ceil(n*8 / log2(62)); log2(62) ≈ 5.954
	out := make([]byte, len(prefix), len(prefix)+chars)
	copy(out, prefix)
	buf := make([]byte, chars+chars/4+8)
	for len(out) < cap(out) {
		mustRead(buf)
		for _, c := range buf {
			if c >= 248 { // 248 = 4×62: values above would favour the first characters
				continue
			}
			out = append(out, base62[c%62])
			if len(out) == cap(out) {
				break
			}
		}
	}
	return string(out)
}

// StdSecret returns prefix followed by n random bytes in standard padded base64, the form
// Standard Webhooks libraries decode after stripping "whsec_".
func StdSecret(prefix string, n int) string {
	b := make([]byte, n)
	mustRead(b)
	return prefix + base64.StdEncoding.EncodeToString(b)
}

// mustRead fills b from the system CSPRNG. crypto/rand.Read never fails on supported
// platforms (it crashes the program itself if the kernel source breaks), so there is no error
// to handle.
func mustRead(b []byte) {
	_, _ = rand.Read(b)
}
