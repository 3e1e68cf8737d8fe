// Package mongo stores API keys in MongoDB.
//
// A key's document has the hex SHA-256 of its secret as _id, so authentication, the hot path,
// is a lookup by _id alone: index-backed on MongoDB and the one filter the embedded store
// answers from its primary key. The public key_… id has its own unique index; it is used only
// by the admin API.
//
// A key document is written at creation and then only by the admin API: revoke, roll (which
// sets expires_at) and a rate-limit change. last_used lives in a document of its own
// (collection api_key_usage, _id = key id), because the embedded store (FerretDB 1.24) applies
// updates as read-modify-write of the whole document without isolation: a last_used write
// racing a revoke could otherwise write the pre-revoke document back and silently un-revoke
// the key. For the same reason the admin writes of one key are serialised in-process (striped
// locks); on MongoDB each is a single atomic conditional update anyway.
package mongo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/mongox"
)

// Collection names.
const (
	Collection      = "api_keys"
	UsageCollection = "api_key_usage"
)

// Keys is the MongoDB domain.KeyRepository.
type Keys struct {
	coll  *mongo.Collection
	usage *mongo.Collection
	locks [64]sync.Mutex // admin writes of one key id, serialised (see the package comment)
}

// lock takes the striped lock of key id and returns its unlock.
func (r *Keys) lock(id string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	m := &r.locks[h.Sum32()%uint32(len(r.locks))]
	m.Lock()
	return m.Unlock
}

var _ domain.KeyRepository = (*Keys)(nil)

// NewKeys returns the repository on db, creating its indexes.
func NewKeys(ctx context.Context, db *mongo.Database) (*Keys, error) {
	coll := db.Collection(Collection)
	// One index per call: the embedded store (FerretDB 1.24) crashes the connection when one
	// createIndexes command names several indexes that all exist already, which is every
	// start after the first.
	for _, m := range []mongo.IndexModel{
		{Keys: bson.D{{Key: "id", Value: 1}}, Options: options.Index().SetName("id_unique").SetUnique(true)},
		// Admin lists of one account, newest first.
		{Keys: bson.D{{Key: "account", Value: 1}, {Key: "id", Value: -1}}, Options: options.Index().SetName("account_id")},
	} {
		if err := mongox.EnsureIndexes(ctx, coll, m); err != nil {
			return nil, err
		}
	}
	return &Keys{coll: coll, usage: db.Collection(UsageCollection)}, nil
}

type keyDoc struct {
	Hash      string     `bson:"_id"`
	ID        string     `bson:"id"`
	Account   string     `bson:"account"`
	Livemode  bool       `bson:"livemode"`
	Created   time.Time  `bson:"created"`
	RevokedAt *time.Time `bson:"revoked_at"`
	// Fields added with restricted keys, rolling and per-key limits; absent in older
	// documents, which are secret keys without expiry or limit of their own.
	Type        string            `bson:"type,omitempty"`
	Permissions map[string]string `bson:"permissions,omitempty"`
	ExpiresAt   *time.Time        `bson:"expires_at"`
	RateLimit   *int              `bson:"rate_limit"`
}

type usageDoc struct {
	ID       string    `bson:"_id"` // key id
	LastUsed time.Time `bson:"last_used"`
}

func toDoc(k domain.Key) keyDoc {
	d := keyDoc{
		Hash:      k.Hash().String(),
		ID:        k.ID(),
		Account:   k.Account(),
		Livemode:  k.Livemode(),
		Created:   k.Created().UTC(),
		RevokedAt: optTime(k.RevokedAt()),
		Type:      string(k.Type()),
		ExpiresAt: optTime(k.ExpiresAt()),
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
	h, err := domain.ParseHash(d.Hash)
	if err != nil {
		return domain.Key{}, fmt.Errorf("key %s: %w", d.ID, err)
	}
	return domain.RehydrateKey(domain.KeyState{
		ID: d.ID, Account: d.Account, Livemode: d.Livemode, Type: domain.KeyType(d.Type), Hash: h,
		Permissions: d.Permissions, RateLimit: d.RateLimit,
		Created: d.Created, LastUsed: lastUsed, ExpiresAt: timeOf(d.ExpiresAt), RevokedAt: timeOf(d.RevokedAt),
	}), nil
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// Create implements domain.KeyRepository.
func (r *Keys) Create(ctx context.Context, k domain.Key) error {
	if _, err := r.coll.InsertOne(ctx, toDoc(k)); err != nil {
		if mongox.IsDuplicateKey(err) {
			return domain.ErrKeyExists
		}
		return fmt.Errorf("insert key %s: %w", k.ID(), err)
	}
	return nil
}

// ByHash implements domain.KeyRepository. The filter is exactly {_id: …} on purpose (see the
// package comment), and it is the only query: unknown and known keys cost the same.
func (r *Keys) ByHash(ctx context.Context, h domain.Hash) (domain.Key, error) {
	d, err := r.findOne(ctx, bson.D{{Key: "_id", Value: h.String()}}, "")
	if err != nil {
		return domain.Key{}, err
	}
	return d.toDomain(time.Time{})
}

// ByID implements domain.KeyRepository.
func (r *Keys) ByID(ctx context.Context, id string) (domain.Key, error) {
	d, err := r.findOne(ctx, bson.D{{Key: "id", Value: id}}, id)
	if err != nil {
		return domain.Key{}, err
	}
	return r.withUsage(ctx, d)
}

func (r *Keys) findOne(ctx context.Context, filter bson.D, id string) (keyDoc, error) {
	var d keyDoc
	if err := r.coll.FindOne(ctx, filter).Decode(&d); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return keyDoc{}, domain.KeyNotFound(id)
		}
		return keyDoc{}, fmt.Errorf("find key: %w", err)
	}
	return d, nil
}

// withUsage adds last_used to one key.
func (r *Keys) withUsage(ctx context.Context, d keyDoc) (domain.Key, error) {
	var u usageDoc
	err := r.usage.FindOne(ctx, bson.D{{Key: "_id", Value: d.ID}}).Decode(&u)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return domain.Key{}, fmt.Errorf("find key %s last_used: %w", d.ID, err)
	}
	return d.toDomain(u.LastUsed)
}

// Revoke implements domain.KeyRepository. Revocation is one-way, so a conditional $set is
// enough to make concurrent revokes agree on the first revocation time without reading first.
func (r *Keys) Revoke(ctx context.Context, id string, at time.Time) (domain.Key, error) {
	defer r.lock(id)()
	d, found, err := r.setReturning(ctx,
		bson.D{{Key: "id", Value: id}, {Key: "revoked_at", Value: nil}},
		bson.D{{Key: "revoked_at", Value: at.UTC()}})
	switch {
	case err != nil:
		return domain.Key{}, fmt.Errorf("revoke key %s: %w", id, err)
	case !found:
		// Either there is no such key or it was already revoked; ByID tells which.
		return r.ByID(ctx, id)
	}
	return r.withUsage(ctx, d)
}

// setReturning $sets fields of the key matching filter and returns the key as stored after;
// found is false when no key matched.
func (r *Keys) setReturning(ctx context.Context, filter, fields bson.D) (keyDoc, bool, error) {
	var d keyDoc
	err := r.coll.FindOneAndUpdate(ctx, filter, bson.D{{Key: "$set", Value: fields}},
		options.FindOneAndUpdate().SetReturnDocument(options.After),
	).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return keyDoc{}, false, nil
	}
	return d, err == nil, err
}

// Roll implements domain.KeyRepository. The successor is inserted first and the old key's
// expiry set after, on condition that the old key is still neither revoked nor rolled; when
// that condition fails the successor is deleted again. So a crash in between leaves at most a
// successor whose secret nobody ever received, never an old key expiring without successor.
func (r *Keys) Roll(ctx context.Context, old, next domain.Key) error {
	defer r.lock(old.ID())()
	if err := r.Create(ctx, next); err != nil {
		return err
	}
	res, err := r.coll.UpdateOne(ctx,
		bson.D{{Key: "id", Value: old.ID()}, {Key: "revoked_at", Value: nil}, {Key: "expires_at", Value: nil}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "expires_at", Value: old.ExpiresAt().UTC()}}}},
	)
	if err == nil && res.MatchedCount == 1 {
		return nil
	}
	// Undo with a budget of its own: ctx may be what just failed.
	undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, derr := r.coll.DeleteOne(undo, bson.D{{Key: "_id", Value: next.Hash().String()}}); derr != nil {
		return errors.Join(fmt.Errorf("roll key %s: removing the unused successor %s: %w", old.ID(), next.ID(), derr), err)
	}
	if err != nil {
		return fmt.Errorf("roll key %s: %w", old.ID(), err)
	}
	return domain.KeyNotRollable(old.ID())
}

// SetRateLimit implements domain.KeyRepository.
func (r *Keys) SetRateLimit(ctx context.Context, id string, rl *domain.RateLimit) (domain.Key, error) {
	defer r.lock(id)()
	var v any // BSON null removes the override
	if rl != nil {
		v = rl.PerSecond
	}
	d, found, err := r.setReturning(ctx, bson.D{{Key: "id", Value: id}}, bson.D{{Key: "rate_limit", Value: v}})
	switch {
	case err != nil:
		return domain.Key{}, fmt.Errorf("set rate limit of key %s: %w", id, err)
	case !found:
		return domain.Key{}, domain.KeyNotFound(id)
	}
	return r.withUsage(ctx, d)
}

// TouchLastUsed implements domain.KeyRepository. $max keeps replicas that write out of order
// from moving last_used backwards.
func (r *Keys) TouchLastUsed(ctx context.Context, id string, at time.Time) error {
	touch := func() error {
		_, err := r.usage.UpdateOne(ctx,
			bson.D{{Key: "_id", Value: id}},
			bson.D{{Key: "$max", Value: bson.D{{Key: "last_used", Value: at.UTC()}}}},
			options.UpdateOne().SetUpsert(true),
		)
		return err
	}
	err := touch()
	// Two upserts of a missing document can both try to insert it; the loser finds it now
	// exists and updates it.
	if mongox.IsDuplicateKey(err) {
		err = touch()
	}
	if err != nil {
		return fmt.Errorf("touch key %s last_used: %w", id, err)
	}
	return nil
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
	docs, more, err := mongox.FindPageOn[keyDoc](ctx, r.coll, "id", filter, p)
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
	out := make(map[string]time.Time, len(docs))
	if len(docs) == 0 {
		return out, nil
	}
	idList := make(bson.A, len(docs))
	for i, d := range docs {
		idList[i] = d.ID
	}
	cur, err := r.usage.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: idList}}}})
	if err != nil {
		return nil, fmt.Errorf("list keys last_used: %w", err)
	}
	var usage []usageDoc
	if err := cur.All(ctx, &usage); err != nil {
		return nil, fmt.Errorf("list keys last_used: decode: %w", err)
	}
	for _, u := range usage {
		out[u.ID] = u.LastUsed
	}
	return out, nil
}
