package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

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
	// secretBytes is the randomness of a generated secret (43 base64url characters).
	secretBytes = 32
	// A secret's body is base64url; at least 32 characters carry at least 24 random bytes.
	// The upper bound keeps a hostile Authorization header from costing more than one hash.
	secretMinChars = 32
	secretMaxChars = 128
)

// Hash is the SHA-256 of a secret, the only form in which a secret is stored. A fast hash is
// right here: the secret is 32 random bytes, not a password, so there is nothing to stretch.
type Hash [sha256.Size]byte

// HashSecret returns the hash under which the key with this secret is stored.
func HashSecret(secret string) Hash { return sha256.Sum256([]byte(secret)) }

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

// ParseSecret reports whether s has the shape of an API key secret and, if so, the type and
// mode of its key. Shape only: whether a key with this secret exists is the repository's
// business.
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
	if body == "" || len(body) < secretMinChars || len(body) > secretMaxChars {
		return "", false, false
	}
	for _, c := range []byte(body) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", false, false
		}
	}
	return t, livemode, true
}
