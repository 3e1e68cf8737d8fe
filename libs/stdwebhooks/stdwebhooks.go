// Package stdwebhooks signs deliveries as the Standard Webhooks specification says
// (https://www.standardwebhooks.com), so any of its verification libraries, or Svix's, accepts
// them with the endpoint's whsec_ secret.
package stdwebhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// Header names of a signed delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret; the rest is the key in standard base64.
const SecretPrefix = "whsec_"

// DecodeSecret returns the key bytes of a whsec_ secret.
func DecodeSecret(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("stdwebhooks: secret does not start with " + SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) == 0 {
		return nil, errors.New("stdwebhooks: secret is not base64 after " + SecretPrefix)
	}
	return key, nil
}

// Sign returns the webhook-signature header value for a message: one "v1,<base64 HMAC-SHA256>"
// per key, of "{id}.{timestamp}.{body}", space-separated in the order of keys (during a secret
// rotation the new key first, then the old one, so receivers holding either accept it).
func Sign(keys [][]byte, id string, timestamp int64, body []byte) string {
	ts := strconv.FormatInt(timestamp, 10)
	var b strings.Builder
	for i, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(ts))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
