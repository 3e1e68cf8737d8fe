// Package mongo stores API keys in MongoDB.
//
// A key's document has the hex SHA-256 of its secret as _id, so authentication, the hot path,
// is a lookup by _id alone: index-backed on MongoDB and the one filter the embedded store
// answers from its primary key. The public key_… id has its own unique index; it is used only
// by the admin API.
//
// A key document is written at creation and then only by the admin API (revoke, roll, a rate
// limit change), each a versioned update through libs/docstore. last_used lives in a document
// of its own (collection api_key_usage, _id = key id): it is written on the request path of
// every replica, and kept apart it never races the admin writes or turns them into conflicts.
package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/docstore"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/listing"
)

// Collection names.
const (
	Collection      = "api_keys"
	UsageCollection = "api_key_usage"
)

// Keys is the MongoDB domain.KeyRepository.
type Keys struct {
	keys  *docstore.Collection[keyDoc]
	usage *docstore.Stamps // last_used, by key id
}

var _ domain.KeyRepository = (*Keys)(nil)

// errNoKey is the store's answer for a hash with no key; each method says it in its terms.
var errNoKey = errors.New("no such key")

// NewKeys returns the repository on db, creating its indexes.
func NewKeys(ctx context.Context, db *docstore.DB) (*Keys, error) {
	keys := docstore.NewCollection[keyDoc](db, Collection, docstore.Options{
		NotFound: func(string) error { return errNoKey },
		Indexes: []mongo.IndexModel{
			{Keys: bson.D{{Key: "id", Value: 1}}, Options: options.Index().SetName("id_unique").SetUnique(true)},
			// Admin lists of one account, newest first.
			{Keys: bson.D{{Key: "account", Value: 1}, {Key: "id", Value: -1}}, Options: options.Index().SetName("account_id")},
		},
	})
	if err := keys.EnsureIndexes(ctx); err != nil {
		return nil, err
	}
	return &Keys{keys: keys, usage: db.Stamps(UsageCollection, "last_used")}, nil
}

// keyDoc is a stored key; its _id (Meta.ID) is the hash of its secret.
type keyDoc struct {
	docstore.Meta `bson:",inline"`
	ID            string     `bson:"id"`
	Account       string     `bson:"account"`
	Livemode      bool       `bson:"livemode"`
	Created       time.Time  `bson:"created"`
	RevokedAt     *time.Time `bson:"revoked_at"`
	// Fields added with restricted keys, rolling and per-key limits; absent in older
	// documents, which are secret keys without expiry or limit of their own.
	Type        string            `bson:"type,omitempty"`
	Permissions map[string]string `bson:"permissions,omitempty"`
	ExpiresAt   *time.Time        `bson:"expires_at"`
	RateLimit   *int              `bson:"rate_limit"`
}

func toDoc(k domain.Key) keyDoc {
	d := keyDoc{
		Meta:      docstore.Meta{ID: k.Hash().String()},
		ID:        k.ID(),
		Account:   k.Account(),
		Livemode:  k.Livemode(),
		Created:   k.Created().UTC(),
		RevokedAt: docstore.TimePtr(k.RevokedAt()),
		Type:      string(k.Type()),
		ExpiresAt: docstore.TimePtr(k.ExpiresAt()),
		RateLimit: rateOf(k),
	}
	if k.Type() == domain.KeyRestricted {
		d.Permissions = map[string]string{}
		for r, a := range k.Permissions().Map() {
			d.Permissions[string(r)] = a.String()
		}
	}
	return d
}

func rateOf(k domain.Key) *int {
	if r, ok := k.RateLimit(); ok {
		return &r.PerSecond
	}
	return nil
}

func (d keyDoc) toDomain(lastUsed time.Time) (domain.Key, error) {
	h, err := domain.ParseHash(d.Meta.ID)
	if err != nil {
		return domain.Key{}, fmt.Errorf("key %s: %w", d.ID, err)
	}
	return domain.RehydrateKey(domain.KeyState{
		ID: d.ID, Account: d.Account, Livemode: d.Livemode, Type: domain.KeyType(d.Type), Hash: h,
		Permissions: d.Permissions, RateLimit: d.RateLimit,
		Created: d.Created, LastUsed: lastUsed, ExpiresAt: docstore.TimeOf(d.ExpiresAt), RevokedAt: docstore.TimeOf(d.RevokedAt),
	}), nil
}

// Create implements domain.KeyRepository.
func (r *Keys) Create(ctx context.Context, k domain.Key) error {
	created, err := r.keys.Insert(ctx, toDoc(k))
	if err != nil {
		return fmt.Errorf("insert key %s: %w", k.ID(), err)
	}
	if !created {
		return domain.ErrKeyExists
	}
	return nil
}

// ByHash implements domain.KeyRepository: a read by _id, and the only query, so unknown and
// known keys cost the same.
func (r *Keys) ByHash(ctx context.Context, h domain.Hash) (domain.Key, error) {
	d, err := r.keys.Get(ctx, h.String())
	if errors.Is(err, errNoKey) {
		return domain.Key{}, domain.KeyNotFound("")
	}
	if err != nil {
		return domain.Key{}, err
	}
	return d.toDomain(time.Time{})
}

// ByID implements domain.KeyRepository.
func (r *Keys) ByID(ctx context.Context, id string) (domain.Key, error) {
	d, err := r.byID(ctx, id)
	if err != nil {
		return domain.Key{}, err
	}
	return r.withUsage(ctx, d)
}

func (r *Keys) byID(ctx context.Context, id string) (keyDoc, error) {
	d, found, err := r.keys.FindOne(ctx, bson.D{{Key: "id", Value: id}})
	switch {
	case err != nil:
		return keyDoc{}, fmt.Errorf("find key %s: %w", id, err)
	case !found:
		return keyDoc{}, domain.KeyNotFound(id)
	}
	return d, nil
}

// update applies fn to the key with this public id (its _id is the hash, which never changes).
func (r *Keys) update(ctx context.Context, id string, fn func(*keyDoc) error) (keyDoc, error) {
	d, err := r.byID(ctx, id)
	if err != nil {
		return keyDoc{}, err
	}
	d, err = r.keys.Update(ctx, d.Meta.ID, fn)
	if errors.Is(err, errNoKey) {
		return keyDoc{}, domain.KeyNotFound(id)
	}
	return d, err
}

// withUsage adds last_used to one key.
func (r *Keys) withUsage(ctx context.Context, d keyDoc) (domain.Key, error) {
	lastUsed, err := r.usage.Get(ctx, d.ID)
	if err != nil {
		return domain.Key{}, err
	}
	return d.toDomain(lastUsed)
}

// Revoke implements domain.KeyRepository. Revocation is one-way: concurrent revokes agree on
// the first revocation time.
func (r *Keys) Revoke(ctx context.Context, id string, at time.Time) (domain.Key, error) {
	d, err := r.update(ctx, id, func(d *keyDoc) error {
		if d.RevokedAt == nil {
			d.RevokedAt = docstore.TimePtr(at)
		}
		return nil
	})
	if err != nil {
		return domain.Key{}, fmt.Errorf("revoke key %s: %w", id, err)
	}
	return r.withUsage(ctx, d)
}

// Roll implements domain.KeyRepository. The successor is inserted first and the old key's
// expiry set after, on condition that the old key is still neither revoked nor rolled; when
// that condition fails the successor is deleted again. So a crash in between leaves at most a
// successor whose secret nobody ever received, never an old key expiring without successor.
func (r *Keys) Roll(ctx context.Context, old, next domain.Key) error {
	if err := r.Create(ctx, next); err != nil {
		return err
	}
	_, err := r.update(ctx, old.ID(), func(d *keyDoc) error {
		if d.RevokedAt != nil || d.ExpiresAt != nil {
			return domain.KeyNotRollable(old.ID())
		}
		d.ExpiresAt = docstore.TimePtr(old.ExpiresAt())
		return nil
	})
	if err == nil {
		return nil
	}
	if domainerr.KindOf(err) == domainerr.NotFound {
		err = domain.KeyNotRollable(old.ID())
	}
	// Undo with a budget of its own: ctx may be what just failed.
	undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if derr := r.keys.Delete(undo, next.Hash().String()); derr != nil {
		return errors.Join(fmt.Errorf("roll key %s: removing the unused successor %s: %w", old.ID(), next.ID(), derr), err)
	}
	if domainerr.As(err) != nil {
		return err
	}
	return fmt.Errorf("roll key %s: %w", old.ID(), err)
}

// SetRateLimit implements domain.KeyRepository.
func (r *Keys) SetRateLimit(ctx context.Context, id string, rl *domain.RateLimit) (domain.Key, error) {
	d, err := r.update(ctx, id, func(d *keyDoc) error {
		d.RateLimit = nil // removes the override
		if rl != nil {
			d.RateLimit = &rl.PerSecond
		}
		return nil
	})
	if err != nil {
		return domain.Key{}, fmt.Errorf("set rate limit of key %s: %w", id, err)
	}
	return r.withUsage(ctx, d)
}

// TouchLastUsed implements domain.KeyRepository: a stamp that only moves forward, so replicas
// that write out of order never move last_used backwards.
func (r *Keys) TouchLastUsed(ctx context.Context, id string, at time.Time) error {
	return r.usage.Advance(ctx, id, at)
}

// List implements domain.KeyRepository. It pages on the public id, not _id (the secret's
// hash). created is stored as a date, so its bounds are put in the filter here.
func (r *Keys) List(ctx context.Context, account string, p listing.Params) ([]domain.Key, bool, error) {
	filter := bson.D{}
	if account != "" {
		filter = append(filter, bson.E{Key: "account", Value: account})
	}
	if p.CreatedGTE != nil || p.CreatedLTE != nil {
		var created bson.D
		if p.CreatedGTE != nil {
			created = append(created, bson.E{Key: "$gte", Value: time.Unix(*p.CreatedGTE, 0).UTC()})
		}
		if p.CreatedLTE != nil {
			// Inclusive of the whole second, as created is shown in seconds.
			created = append(created, bson.E{Key: "$lt", Value: time.Unix(*p.CreatedLTE+1, 0).UTC()})
		}
		filter = append(filter, bson.E{Key: "created", Value: created})
		p.CreatedGTE, p.CreatedLTE = nil, nil
	}
	docs, more, err := r.keys.PageOn(ctx, "id", filter, p)
	if err != nil {
		return nil, false, fmt.Errorf("list keys: %w", err)
	}
	lastUsed, err := r.lastUsed(ctx, docs)
	if err != nil {
		return nil, false, err
	}
	keys := make([]domain.Key, len(docs))
	for i, d := range docs {
		k, err := d.toDomain(lastUsed[d.ID])
		if err != nil {
			return nil, false, err
		}
		keys[i] = k
	}
	return keys, more, nil
}

// lastUsed reads last_used for a page of keys in one query.
func (r *Keys) lastUsed(ctx context.Context, docs []keyDoc) (map[string]time.Time, error) {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return r.usage.GetAll(ctx, ids)
}
