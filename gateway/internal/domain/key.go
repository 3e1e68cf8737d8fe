package domain

import (
	"context"
	"time"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
)

// Key is a secret API key. It is never deleted: a revoked key stays, so that its id keeps
// meaning something in logs and lists.
type Key struct {
	id        string
	account   string
	livemode  bool
	hash      Hash
	created   time.Time
	lastUsed  time.Time // zero: never used
	revokedAt time.Time // zero: active
}

// NewKey makes a key with the given id for account and mode, authenticated by secret. The
// secret must have the shape ParseSecret accepts and the prefix of the mode; only its hash is
// kept.
func NewKey(id, account string, livemode bool, secret string, created time.Time) (Key, error) {
	if !ids.Valid(ids.APIKey, id) {
		return Key{}, invalid("id", "Invalid key id '%s'.", id)
	}
	if err := ValidateAccount(account); err != nil {
		return Key{}, err
	}
	mode, ok := ParseSecret(secret)
	if !ok {
		return Key{}, invalid("secret", "Invalid secret: expected '%s' followed by %d to %d base64url characters.",
			SecretPrefix(livemode), secretMinChars, secretMaxChars)
	}
	if mode != livemode {
		return Key{}, invalid("secret", "Invalid secret: a key with livemode %t needs a secret starting with '%s'.",
			livemode, SecretPrefix(livemode))
	}
	return Key{id: id, account: account, livemode: livemode, hash: HashSecret(secret), created: created}, nil
}

// RehydrateKey rebuilds a stored key. It checks nothing: what was stored was valid.
func RehydrateKey(id, account string, livemode bool, hash Hash, created, lastUsed, revokedAt time.Time) Key {
	return Key{id: id, account: account, livemode: livemode, hash: hash, created: created, lastUsed: lastUsed, revokedAt: revokedAt}
}

// ID returns the public id, "key_…".
func (k Key) ID() string { return k.id }

// Account returns the account the key acts for.
func (k Key) Account() string { return k.account }

// Livemode reports whether the key is a live-mode key.
func (k Key) Livemode() bool { return k.livemode }

// Hash returns the hash of the key's secret.
func (k Key) Hash() Hash { return k.hash }

// Created returns when the key was made.
func (k Key) Created() time.Time { return k.created }

// LastUsed returns when the key last authenticated a request, to within a minute, or the zero
// time if it never has.
func (k Key) LastUsed() time.Time { return k.lastUsed }

// Revoked reports whether the key has been revoked.
func (k Key) Revoked() bool { return !k.revokedAt.IsZero() }

// RevokedAt returns when the key was revoked, or the zero time.
func (k Key) RevokedAt() time.Time { return k.revokedAt }

// KeyRepository stores keys. Implementations are safe for concurrent use.
type KeyRepository interface {
	// Create stores a new key; ErrKeyExists when its id or secret hash is taken.
	Create(ctx context.Context, k Key) error
	// ByHash returns the key with this secret hash (the authentication lookup); KeyNotFound
	// when there is none. LastUsed is left zero: authentication does not need it, and reading
	// it would make the lookup of a known key slower than that of an unknown one.
	ByHash(ctx context.Context, h Hash) (Key, error)
	// ByID returns the key with this public id; KeyNotFound when there is none.
	ByID(ctx context.Context, id string) (Key, error)
	// List returns one page of keys, newest first, of one account or (account "") of all.
	List(ctx context.Context, account string, p listing.Params) ([]Key, bool, error)
	// Revoke marks the key revoked at the given time and returns it. Revoking a revoked key
	// changes nothing and returns it as it is. KeyNotFound when there is no such key.
	Revoke(ctx context.Context, id string, at time.Time) (Key, error)
	// TouchLastUsed records a use of the key with this id. It never fails for want of the
	// key, and does not move last-used backwards (except, on a store without atomic updates,
	// when two replicas write at once).
	TouchLastUsed(ctx context.Context, id string, at time.Time) error
}
