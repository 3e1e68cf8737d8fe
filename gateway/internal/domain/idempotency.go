package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"mime"
	"net/url"

	"rentalplatform/libs/domainerr"
)

// IdempotencyKeyHeader is the request header that carries a client's idempotency key.
const IdempotencyKeyHeader = "Idempotency-Key"

// MaxIdempotencyKeyLen bounds an idempotency key.
const MaxIdempotencyKeyLen = 255

// ValidateIdempotencyKey checks that key is 1 to 255 printable ASCII characters (space to
// tilde). Errors name the header.
func ValidateIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return invalid(IdempotencyKeyHeader, "Invalid Idempotency-Key: expected 1 to %d printable characters, got %d.",
			MaxIdempotencyKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return invalid(IdempotencyKeyHeader, "Invalid Idempotency-Key: only printable ASCII characters are allowed (byte %d is 0x%02x).", i, c)
		}
	}
	return nil
}

// Idempotency errors.
var (
	// ErrIdempotencyKeyInUse: another request with the key is still being processed.
	ErrIdempotencyKeyInUse = &domainerr.Error{Kind: domainerr.IdempotencyInUse, Code: domainerr.CodeIdempotencyKeyInUse, Param: IdempotencyKeyHeader,
		Message: "There is currently another in-progress request using this Idempotency-Key; retry this request later."}
	// ErrIdempotencyKeyReused: the key was used with another method, path or parameters.
	ErrIdempotencyKeyReused = &domainerr.Error{Kind: domainerr.IdempotencyReused, Code: domainerr.CodeIdempotencyKeyReused, Param: IdempotencyKeyHeader,
		Message: "This Idempotency-Key was already used with a different method, path or parameters. Use a new key for a different request."}
)

// Fingerprint identifies "the same request" for idempotency: the method, the path, the query
// parameters in sorted order, and the body. A JSON body counts by its content, not its
// spelling: it is decoded and encoded again, which sorts object keys and drops insignificant
// whitespace (numbers keep their literal form). A body that is not JSON counts byte for byte.
func Fingerprint(method, path string, query, body []byte) string {
	h := sha256.New()
	writeHead(h, "json", method, path, query)
	if canon, ok := canonicalJSON(body); ok {
		h.Write([]byte{'j'})
		h.Write(canon)
	} else {
		h.Write([]byte{'r'})
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeHead(h hash.Hash, kind, method, path string, query []byte) {
	q := string(query)
	if v, err := url.ParseQuery(q); err == nil {
		q = v.Encode() // sorted by name
	}
	for _, s := range []string{"v1", kind, method, path, q} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
}

func canonicalJSON(body []byte) ([]byte, bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // trailing data after the value
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

// UploadFingerprint computes the fingerprint of a streamed (multipart) upload while it is
// sent: method, path, media type, and the body with every occurrence of the multipart
// boundary blanked out. Clients pick a new random boundary for every request they build, so
// without that a retry of the same upload would never match; with it, a retry matches when
// its parts (headers and contents) are byte for byte the same.
type UploadFingerprint struct {
	h   hash.Hash
	sep []byte // "--" + boundary; nil when the body is not multipart
	buf []byte // tail that may be the start of a separator
}

// NewUploadFingerprint starts the fingerprint of an upload with this Content-Type.
func NewUploadFingerprint(method, path string, query []byte, contentType string) *UploadFingerprint {
	f := &UploadFingerprint{h: sha256.New()}
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		media = contentType
	}
	writeHead(f.h, "upload", method, path, query)
	f.h.Write([]byte(media))
	f.h.Write([]byte{0})
	if b := params["boundary"]; b != "" && err == nil {
		f.sep = []byte("--" + b)
	}
	return f
}

// Write adds body bytes. It never fails.
func (f *UploadFingerprint) Write(p []byte) (int, error) {
	if f.sep == nil {
		return f.h.Write(p)
	}
	f.buf = append(f.buf, p...)
	for {
		i := bytes.Index(f.buf, f.sep)
		if i < 0 {
			break
		}
		f.h.Write(f.buf[:i])
		f.h.Write([]byte("--"))
		f.buf = f.buf[i+len(f.sep):]
	}
	// Keep only what could be the beginning of a separator split across writes.
	if keep := len(f.sep) - 1; len(f.buf) > keep {
		f.h.Write(f.buf[:len(f.buf)-keep])
		f.buf = append(f.buf[:0:0], f.buf[len(f.buf)-keep:]...)
	}
	return len(p), nil
}

// Sum returns the fingerprint of everything written.
func (f *UploadFingerprint) Sum() string {
	f.h.Write(f.buf)
	f.buf = nil
	return hex.EncodeToString(f.h.Sum(nil))
}

// StoredResponse is a response kept for replays: the service's status, its end-to-end
// headers and its body exactly as the client first received them.
type StoredResponse struct {
	Status    int
	Header    [][2]string
	Body      []byte
	RequestID string // of the request that produced it
}

// IdempotencyRecord is what is stored under an idempotency key: while the first request
// runs, a lock with its fingerprint (empty for an upload, whose fingerprint is known only
// once its body was read); then the response.
type IdempotencyRecord struct {
	Fingerprint string
	Done        bool
	Response    StoredResponse
}

// Matches reports whether a request with fingerprint fp is the one the record is about.
func (r IdempotencyRecord) Matches(fp string) bool { return r.Fingerprint == fp }

// ResponseStorable reports whether a service's answer with this status is kept for replays.
// Everything the service decided is kept, errors included, except the answers that say the
// request was not applied and should simply be retried: 409 (a conflicting state or a lock
// conflict), 429 and 503.
func ResponseStorable(status int) bool {
	switch status {
	case 409, 429, 503:
		return false
	}
	return true
}
