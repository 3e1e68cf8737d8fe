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
	pool   sync.Pool // reusable buffers for the canonical string
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
	s.pool.New = func() any { b := make([]byte, 0, 256); return &b }
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
	set(HeaderSignature, "v1="+s.mac(ts, method, path, id))
}

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
	got, err := hex.DecodeString(sig[len(scheme):])
	if err != nil {
		return Identity{}, ErrSignature
	}
	want, _ := hex.DecodeString(s.mac(ts, method, path, id))
	if !hmac.Equal(got, want) {
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

func (s *Signer) mac(ts, method, path string, id Identity) string {
	bp := s.pool.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, "v1\n"...)
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
	m := hmac.New(sha256.New, s.secret)
	m.Write(b)
	*bp = b
	s.pool.Put(bp)
	return hex.EncodeToString(m.Sum(nil))
}
