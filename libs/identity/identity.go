// Package identity carries who is calling from the gateway to a service. The gateway
// authenticates the API key; the service trusts these headers only when their HMAC verifies
// with the shared secret, so a request that bypassed the gateway is refused.
package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"
	"time"
)

// Header names. The gateway deletes any client-sent copies before setting them.
const (
	HeaderAccount        = "X-Rental-Account"
	HeaderLivemode       = "X-Rental-Livemode"
	HeaderRequestID      = "X-Request-Id"
	HeaderIdempotencyKey = "X-Rental-Idempotency-Key"
	HeaderTimestamp      = "X-Rental-Timestamp"
	HeaderSignature      = "X-Rental-Signature"
)

// Headers lists every header this package sets, for stripping them from inbound requests.
var Headers = [...]string{HeaderAccount, HeaderLivemode, HeaderRequestID, HeaderIdempotencyKey, HeaderTimestamp, HeaderSignature}

// MinSecretLen is the shortest shared secret accepted.
const MinSecretLen = 32

// MaxSkew is how far a signature's timestamp may be from the verifier's clock.
const MaxSkew = 5 * time.Minute

// Identity is the caller of a service request.
type Identity struct {
	Account        string
	Livemode       bool
	RequestID      string
	IdempotencyKey string // empty when the client sent none
}

// HostedAccount is the Account of a hosted-page request: a page the gateway serves to a person
// in a browser without an API key (an applicant's verification page, /verify/…), whose own
// credential the service checks (the session's client secret). The gateway still signs it, so
// a service keeps refusing whatever did not come through the gateway. It can never be an
// account (those are "acct_" and letters or digits): nothing scoped to an account is found for
// it, and a service accepts it only on the paths it declared as hosted pages, and accepts no
// other identity there (fiberx.Config.HostedPages).
const HostedAccount = "hosted-page"

// Hosted reports whether the identity is a hosted-page request's (HostedAccount).
func (id Identity) Hosted() bool { return id.Account == HostedAccount }

// Errors returned by Verify.
var (
	ErrMissing   = errors.New("identity headers missing")
	ErrSignature = errors.New("identity signature invalid")
	ErrExpired   = errors.New("identity timestamp outside the allowed skew")
)

// Signer signs and verifies identities with one shared secret.
type Signer struct {
	secret []byte
	now    func() time.Time
	// pool holds *macState: an HMAC keyed with the secret (keying costs two SHA-256 blocks
	// and five allocations, every request) and a buffer for the canonical string.
	pool sync.Pool
}

type macState struct {
	mac hash.Hash
	buf []byte
	sum []byte // the MAC's own buffer: a slice handed to the hash.Hash interface escapes
}

// NewSigner returns a Signer for secret, which must be at least MinSecretLen bytes. now is the
// clock (time.Now when nil).
func NewSigner(secret []byte, now func() time.Time) (*Signer, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("identity secret must be at least %d bytes, got %d", MinSecretLen, len(secret))
	}
	if now == nil {
		now = time.Now
	}
	s := &Signer{secret: append([]byte(nil), secret...), now: now}
	s.pool.New = func() any {
		return &macState{mac: hmac.New(sha256.New, s.secret), buf: make([]byte, 0, 256), sum: make([]byte, 0, sha256.Size)}
	}
	return s, nil
}

// Sign sets the identity headers for a request with the given method and path (no query).
func (s *Signer) Sign(set func(key, value string), id Identity, method, path string) {
	ts := strconv.FormatInt(s.now().Unix(), 10)
	set(HeaderAccount, id.Account)
	set(HeaderLivemode, strconv.FormatBool(id.Livemode))
	set(HeaderRequestID, id.RequestID)
	if id.IdempotencyKey != "" {
		set(HeaderIdempotencyKey, id.IdempotencyKey)
	}
	set(HeaderTimestamp, ts)
	var sig [SigLen]byte
	set(HeaderSignature, string(s.AppendSignature(sig[:0], []byte(ts), method, path, id)))
}

// Timestamp is the signer's clock in Unix seconds, as a signature's timestamp header carries
// it: a caller that sets the headers itself (the gateway, on its HTTP library's header type,
// without allocating) signs with it and AppendSignature.
func (s *Signer) Timestamp() int64 { return s.now().Unix() }

// SigLen is the length of a signature header: "v1=" and 64 hex digits.
const SigLen = 3 + 2*sha256.Size

// Verify reads the identity headers through get and checks their signature for method and path.
func (s *Signer) Verify(get func(key string) string, method, path string) (Identity, error) {
	sig, ts := get(HeaderSignature), get(HeaderTimestamp)
	id := Identity{
		Account:        get(HeaderAccount),
		RequestID:      get(HeaderRequestID),
		IdempotencyKey: get(HeaderIdempotencyKey),
	}
	if sig == "" || ts == "" || id.Account == "" {
		return Identity{}, ErrMissing
	}
	switch get(HeaderLivemode) {
	case "true":
		id.Livemode = true
	case "false":
	default:
		return Identity{}, ErrSignature
	}
	const scheme = "v1="
	if len(sig) <= len(scheme) || sig[:len(scheme)] != scheme {
		return Identity{}, ErrSignature
	}
	var got [sha256.Size]byte
	if n, err := hex.Decode(got[:], []byte(sig[len(scheme):])); err != nil || n != len(got) {
		return Identity{}, ErrSignature
	}
	var want [sha256.Size]byte
	s.sum(want[:0], []byte(ts), method, path, id)
	if !hmac.Equal(got[:], want[:]) {
		return Identity{}, ErrSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Identity{}, ErrSignature
	}
	if d := s.now().Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return Identity{}, ErrExpired
	}
	return id, nil
}

// AppendSignature appends the signature header's value ("v1=" and the hex HMAC of the
// canonical string of id, the timestamp ts, method and path) to dst.
func (s *Signer) AppendSignature(dst, ts []byte, method, path string, id Identity) []byte {
	var sum [sha256.Size]byte
	s.sum(sum[:0], ts, method, path, id)
	dst = append(dst, "v1="...)
	return hex.AppendEncode(dst, sum[:])
}

// sum appends the HMAC of the canonical string to dst, which must have room for it.
func (s *Signer) sum(dst, ts []byte, method, path string, id Identity) []byte {
	st := s.pool.Get().(*macState)
	b := append(st.buf[:0], "v1\n"...)
	b = append(b, ts...)
	b = append(b, '\n')
	b = append(b, method...)
	b = append(b, '\n')
	b = append(b, path...)
	b = append(b, '\n')
	b = append(b, id.Account...)
	b = append(b, '\n')
	b = strconv.AppendBool(b, id.Livemode)
	b = append(b, '\n')
	b = append(b, id.RequestID...)
	b = append(b, '\n')
	b = append(b, id.IdempotencyKey...)
	st.mac.Reset()
	st.mac.Write(b)
	st.sum = st.mac.Sum(st.sum[:0])
	dst = append(dst, st.sum...)
	st.buf = b
	s.pool.Put(st)
	return dst
}
