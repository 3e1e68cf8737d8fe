package receiver

// An independent Standard Webhooks verifier (https://www.standardwebhooks.com/), written from
// the specification and deliberately sharing no code with the platform's signer, so that a test
// using it proves what a customer's own Standard Webhooks library would accept:
//
//   - the signed content is "{webhook-id}.{webhook-timestamp}.{raw body}", the timestamp
//     exactly as it appears in its header;
//   - the key is the secret's bytes: the text after the "whsec_" prefix, base64-decoded;
//   - the signature is HMAC-SHA256 over the content, base64 (standard alphabet, padded);
//   - the webhook-signature header holds space-separated "<version>,<signature>" entries;
//     "v1" is the symmetric scheme, other versions are skipped; any one match passes;
//   - webhook-timestamp (integer Unix seconds) must be within the tolerance (5 minutes) of
//     the verifier's clock, in either direction;
//   - signatures are compared in constant time.

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names (http.Header canonicalises them on access).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is the specification's recommended timestamp tolerance.
const DefaultTolerance = 5 * time.Minute

const secretPrefix = "whsec_"

// Verification errors; Verify wraps them with detail, so test with errors.Is.
var (
	ErrInvalidSecret       = errors.New("invalid secret")
	ErrMissingHeader       = errors.New("missing header")
	ErrInvalidTimestamp    = errors.New("invalid webhook-timestamp")
	ErrTimestampTooOld     = errors.New("webhook-timestamp too old")
	ErrTimestampTooNew     = errors.New("webhook-timestamp too new")
	ErrNoMatchingSignature = errors.New("no matching signature")
)

// DecodeSecret returns the HMAC key of a Standard Webhooks secret: the base64 text after the
// optional "whsec_" prefix, decoded.
func DecodeSecret(secret string) ([]byte, error) {
	s := strings.TrimPrefix(secret, secretPrefix)
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64 after %q: %v", ErrInvalidSecret, secretPrefix, err)
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	return key, nil
}

// Sign returns the "v1,<base64>" entry for the content; the tests of the verifier use it, and a
// test may use it to forge or compare. timestamp is the header's text, signed as is.
func Sign(secret, id, timestamp string, body []byte) (string, error) {
	key, err := DecodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + signature(key, id, timestamp, body), nil
}

func signature(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verifier checks deliveries against one or more secrets (several during a rotation).
type Verifier struct {
	keys [][]byte
	// Tolerance is how far webhook-timestamp may be from Now; DefaultTolerance when zero.
	Tolerance time.Duration
	// Now is the verifier's clock; time.Now when nil.
	Now func() time.Time
}

// NewVerifier builds a verifier for the given "whsec_…" secrets.
func NewVerifier(secrets ...string) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: none given", ErrInvalidSecret)
	}
	v := &Verifier{}
	for i, s := range secrets {
		key, err := DecodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// Entry is one entry of a webhook-signature header and what the verifier made of it.
type Entry struct {
	Raw     string // as it appears in the header
	Version string // "v1", …
	// Secret is the index (in NewVerifier's arguments) of the secret that produced this
	// signature, or -1 when none did (or the version is not v1).
	Secret int
}

// Verify checks the delivery's headers and raw body: nil when the timestamp is within the
// tolerance and at least one v1 signature matches one of the secrets.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	entries, err := v.Entries(h, body)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Secret >= 0 {
			return nil
		}
	}
	return fmt.Errorf("%w among %d entries", ErrNoMatchingSignature, len(entries))
}

// Entries checks the headers and the timestamp and reports, for every signature entry, which
// secret (if any) it verifies with. A rotation test uses it to see that each of two signatures
// verifies with exactly one of the two secrets.
func (v *Verifier) Entries(h http.Header, body []byte) ([]Entry, error) {
	id := h.Get(HeaderID)
	ts := h.Get(HeaderTimestamp)
	sigs := strings.Join(h.Values(HeaderSignature), " ")
	switch {
	case id == "":
		return nil, fmt.Errorf("%w: %s", ErrMissingHeader, HeaderID)
	case ts == "":
		return nil, fmt.Errorf("%w: %s", ErrMissingHeader, HeaderTimestamp)
	case strings.TrimSpace(sigs) == "":
		return nil, fmt.Errorf("%w: %s", ErrMissingHeader, HeaderSignature)
	}
	if err := v.checkTimestamp(ts); err != nil {
		return nil, err
	}
	expected := make([]string, len(v.keys))
	for i, key := range v.keys {
		expected[i] = signature(key, id, ts, body)
	}
	var out []Entry
	for _, raw := range strings.Fields(sigs) {
		e := Entry{Raw: raw, Secret: -1}
		version, sig, ok := strings.Cut(raw, ",")
		if !ok {
			out = append(out, e)
			continue
		}
		e.Version = version
		if version == "v1" {
			for i, want := range expected {
				if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) == 1 {
					e.Secret = i
					break
				}
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func (v *Verifier) checkTimestamp(raw string) error {
	sec, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not integer Unix seconds", ErrInvalidTimestamp, raw)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	ts := time.Unix(sec, 0)
	n := now()
	switch {
	case n.Sub(ts) > tol:
		return fmt.Errorf("%w: %s, now %s", ErrTimestampTooOld, ts.UTC().Format(time.RFC3339), n.UTC().Format(time.RFC3339))
	case ts.Sub(n) > tol:
		return fmt.Errorf("%w: %s, now %s", ErrTimestampTooNew, ts.UTC().Format(time.RFC3339), n.UTC().Format(time.RFC3339))
	}
	return nil
}
