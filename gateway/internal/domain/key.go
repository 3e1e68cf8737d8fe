package domain

import (
	"context"
	"time"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
)

// KeyType says what a key may do: a secret key anything its account may, a restricted key
// only what its permissions grant.
type KeyType string

// Key types, as the API names them.
const (
	KeySecret     KeyType = "secret"
	KeyRestricted KeyType = "restricted"
)

// Bounds of key settings.
const (
	// MaxRollExpiry is the longest a rolled key may stay valid next to its successor.
	MaxRollExpiry = 7 * 24 * time.Hour
	// MaxRateLimit bounds a key's own rate limit (requests per second).
	MaxRateLimit = 1_000_000
)

// RateLimit is a key's own rate limit, which replaces the default of its mode. PerSecond 0
// means the key is not limited.
type RateLimit struct {
	PerSecond int
}

// NewRateLimit validates a per-key limit of perSecond requests a second.
func NewRateLimit(perSecond int) (RateLimit, error) {
	if perSecond < 0 || perSecond > MaxRateLimit {
		return RateLimit{}, invalid("rate_limit", "Invalid rate_limit %d: expected 0 (unlimited) to %d requests per second, or null for the default.",
			perSecond, MaxRateLimit)
	}
	return RateLimit{PerSecond: perSecond}, nil
}

// KeySpec is what a new key is made for.
type KeySpec struct {
	Account  string
	Livemode bool
	Type     KeyType // KeySecret when empty
	// Permissions of a restricted key; a secret key must have none.
	Permissions *Permissions
	// RateLimit, when set, replaces the default limit of the key's mode.
	RateLimit *RateLimit
}

// Key is an API key. It is never deleted: a revoked or expired key stays, so that its id keeps
// meaning something in logs and lists.
type Key struct {
	id          string
	account     string
	livemode    bool
	typ         KeyType
	hash        Hash
	permissions Permissions
	rateLimit   *RateLimit
	created     time.Time
	lastUsed    time.Time // zero: never used
	expiresAt   time.Time // zero: does not expire (set when the key is rolled)
	revokedAt   time.Time // zero: active
}

// NewKey makes a key with the given id as spec says, authenticated by secret. The secret must
// have the form of a generated one (ParseGeneratedSecret: 43 letters and digits, so an imported
// secret is as strong as a generated one) and the prefix of the key's type and mode; only its
// hash is kept.
func NewKey(id string, spec KeySpec, secret string, created time.Time) (Key, error) {
	if spec.Type == "" {
		spec.Type = KeySecret
	}
	if !ids.Valid(ids.APIKey, id) {
		return Key{}, invalid("id", "Invalid key id '%s'.", id)
	}
	if err := ValidateAccount(spec.Account); err != nil {
		return Key{}, err
	}
	if spec.Type != KeySecret && spec.Type != KeyRestricted {
		return Key{}, invalid("type", "Invalid key type '%s': expected 'secret' or 'restricted'.", spec.Type)
	}
	if spec.Type == KeySecret && spec.Permissions != nil {
		return Key{}, invalid("permissions", "Only restricted keys have permissions; a secret key may do everything its account may.")
	}
	if spec.RateLimit != nil {
		if _, err := NewRateLimit(spec.RateLimit.PerSecond); err != nil {
			return Key{}, err
		}
	}
	want := SecretPrefix(spec.Type, spec.Livemode)
	t, mode, ok := ParseGeneratedSecret(secret)
	if !ok {
		return Key{}, invalid("secret", "Invalid secret: expected '%s' followed by %d letters and digits (base62), the form of a generated secret.",
			want, SecretChars)
	}
	if mode != spec.Livemode || t != spec.Type {
		return Key{}, invalid("secret", "Invalid secret: a %s key with livemode %t needs a secret starting with '%s'.",
			spec.Type, spec.Livemode, want)
	}
	k := Key{id: id, account: spec.Account, livemode: spec.Livemode, typ: spec.Type, hash: HashSecret(secret), created: created}
	if spec.Permissions != nil {
		k.permissions = *spec.Permissions
	}
	if spec.RateLimit != nil {
		r := *spec.RateLimit
		k.rateLimit = &r
	}
	return k, nil
}

// KeyState is a stored key, for RehydrateKey.
type KeyState struct {
	ID          string
	Account     string
	Livemode    bool
	Type        KeyType // KeySecret when empty (keys stored before restricted keys existed)
	Hash        Hash
	Permissions map[string]string // resource -> access; unknown entries are dropped
	RateLimit   *int
	Created     time.Time
	LastUsed    time.Time
	ExpiresAt   time.Time
	RevokedAt   time.Time
}

// RehydrateKey rebuilds a stored key. It checks nothing: what was stored was valid.
func RehydrateKey(s KeyState) Key {
	if s.Type == "" {
		s.Type = KeySecret
	}
	k := Key{id: s.ID, account: s.Account, livemode: s.Livemode, typ: s.Type, hash: s.Hash,
		created: s.Created, lastUsed: s.LastUsed, expiresAt: s.ExpiresAt, revokedAt: s.RevokedAt}
	if len(s.Permissions) > 0 {
		m := make(map[Resource]Access, len(s.Permissions))
		for r, a := range s.Permissions {
			if lvl, ok := ParseAccess(a); ok && knownResource(Resource(r)) && lvl != AccessNone {
				m[Resource(r)] = lvl
			}
		}
		k.permissions = Permissions{m: m}
	}
	if s.RateLimit != nil {
		k.rateLimit = &RateLimit{PerSecond: *s.RateLimit}
	}
	return k
}

// ID returns the public id, "key_…".
func (k Key) ID() string { return k.id }

// Account returns the account the key acts for.
func (k Key) Account() string { return k.account }

// Livemode reports whether the key is a live-mode key.
func (k Key) Livemode() bool { return k.livemode }

// Type returns whether the key is a secret or a restricted key.
func (k Key) Type() KeyType { return k.typ }

// Permissions returns a restricted key's permissions (none for a secret key, which needs none).
func (k Key) Permissions() Permissions { return k.permissions }

// RateLimit returns the key's own rate limit, if it has one.
func (k Key) RateLimit() (RateLimit, bool) {
	if k.rateLimit == nil {
		return RateLimit{}, false
	}
	return *k.rateLimit, true
}

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

// ExpiresAt returns when a rolled key stops working, or the zero time.
func (k Key) ExpiresAt() time.Time { return k.expiresAt }

// Active reports whether the key authenticates requests at now: not revoked, not expired.
func (k Key) Active(now time.Time) bool {
	return !k.Revoked() && (k.expiresAt.IsZero() || now.Before(k.expiresAt))
}

// Allows reports whether the key may read (write false) or change (write true) objects of
// resource r. A secret key may do anything.
func (k Key) Allows(r Resource, write bool) bool {
	if k.typ != KeyRestricted {
		return true
	}
	need := AccessRead
	if write {
		need = AccessWrite
	}
	return k.permissions.Of(r) >= need
}

// WithRateLimit returns the key with its own rate limit set, or removed (nil).
func (k Key) WithRateLimit(r *RateLimit) (Key, error) {
	if r == nil {
		k.rateLimit = nil
		return k, nil
	}
	v, err := NewRateLimit(r.PerSecond)
	if err != nil {
		return Key{}, err
	}
	k.rateLimit = &v
	return k, nil
}

// Roll makes the successor of k: a key with id nextID and secret nextSecret, for the same
// account and mode, of the same type, with the same permissions and rate limit. k itself
// stays valid for expiresIn (0: it stops at once) and is returned with that expiry. Only an
// active key that has not been rolled before can be rolled.
func (k Key) Roll(nextID, nextSecret string, now time.Time, expiresIn time.Duration) (next, old Key, err error) {
	if expiresIn < 0 || expiresIn > MaxRollExpiry {
		return Key{}, Key{}, invalid("expires_in", "Invalid expires_in %d: expected 0 to %d seconds.",
			int64(expiresIn/time.Second), int64(MaxRollExpiry/time.Second))
	}
	switch {
	case k.Revoked():
		return Key{}, Key{}, invalidState("The API key %s is revoked and cannot be rolled.", k.id)
	case !k.expiresAt.IsZero():
		return Key{}, Key{}, invalidState("The API key %s was already rolled (it expires at %d) and cannot be rolled again; roll its successor instead.",
			k.id, k.expiresAt.Unix())
	}
	spec := KeySpec{Account: k.account, Livemode: k.livemode, Type: k.typ, RateLimit: k.rateLimit}
	if k.typ == KeyRestricted {
		p := k.permissions
		spec.Permissions = &p
	}
	next, err = NewKey(nextID, spec, nextSecret, now)
	if err != nil {
		return Key{}, Key{}, err
	}
	k.expiresAt = now.Add(expiresIn)
	return next, k, nil
}

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
	// Roll stores next, the successor of old, and sets old's expiry (old.ExpiresAt()), as one
	// step that either happens whole or not at all: when old was revoked or rolled since it
	// was read, next is not kept and the error is of KindInvalidState.
	Roll(ctx context.Context, old, next Key) error
	// SetRateLimit replaces the key's own rate limit (nil: none) and returns the key.
	// KeyNotFound when there is no such key.
	SetRateLimit(ctx context.Context, id string, r *RateLimit) (Key, error)
	// TouchLastUsed records a use of the key with this id. It never fails for want of the
	// key, and does not move last-used backwards (except, on a store without atomic updates,
	// when two replicas write at once).
	TouchLastUsed(ctx context.Context, id string, at time.Time) error
}
