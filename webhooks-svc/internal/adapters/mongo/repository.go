// Package mongo stores webhook endpoints in MongoDB, one document per endpoint in the
// collection "webhook_endpoints", keyed by the endpoint id.
package mongo

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/listing"
	"rentalplatform/libs/mongox"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Collection is the name of the endpoints collection.
const Collection = "webhook_endpoints"

// maxUpdateAttempts bounds the optimistic-concurrency retries of one Update. Every lost race
// means another writer won, so this only runs out under heavy contention on one endpoint.
const maxUpdateAttempts = 20

// lockStripes is the number of in-process locks writes of one endpoint are spread over.
const lockStripes = 64

// Repository implements domain.Repository.
//
// Writes to one endpoint are made safe two ways. Across processes, a replace names the version
// it read and is retried when another write got in first (optimistic concurrency; atomic on
// MongoDB). Within this process, writes to one endpoint also take a striped lock, because the
// embedded store (FerretDB v1) evaluates a replace's filter between its read and its write, so
// two concurrent conditional replaces there can both succeed and one update be lost. The lock
// makes one process correct on every store and spares same-process writers futile retries; the
// version check keeps several processes correct on MongoDB.
type Repository struct {
	coll  *mongo.Collection
	seed  maphash.Seed
	locks [lockStripes]sync.Mutex
}

var _ domain.Repository = (*Repository)(nil)

// NewRepository returns a repository over db.
func NewRepository(db *mongo.Database) *Repository {
	return &Repository{coll: db.Collection(Collection), seed: maphash.MakeSeed()}
}

// lock takes the in-process lock of the endpoint's stripe and returns its unlock.
func (r *Repository) lock(id string) func() {
	m := &r.locks[maphash.String(r.seed, id)%lockStripes]
	m.Lock()
	return m.Unlock
}

// EnsureIndexes declares the indexes the queries need. Reads by id use the _id index; lists
// filter on account and mode and sort by _id.
func (r *Repository) EnsureIndexes(ctx context.Context) error {
	return mongox.EnsureIndexes(ctx, r.coll, mongo.IndexModel{
		Keys:    bson.D{{Key: "account", Value: 1}, {Key: "livemode", Value: 1}, {Key: "_id", Value: -1}},
		Options: options.Index().SetName("account_livemode_id"),
	})
}

// document is the stored form. created is Unix seconds, the unit of the API and of the
// created[gte]/[lte] filters of mongox.FindPage. version counts writes, for conditional
// replaces. Metadata is a list of pairs rather than a subdocument because its keys are the
// client's: a key with a dot, a leading $ or a NUL is not a valid field name on every store.
type document struct {
	ID            string          `bson:"_id"`
	Account       string          `bson:"account"`
	Livemode      bool            `bson:"livemode"`
	URL           string          `bson:"url"`
	EnabledEvents []string        `bson:"enabled_events"`
	Status        string          `bson:"status"`
	Secret        string          `bson:"secret"`
	APIVersion    string          `bson:"api_version"`
	Description   string          `bson:"description,omitempty"`
	Metadata      []metadataEntry `bson:"metadata"`
	Created       int64           `bson:"created"`
	Version       int64           `bson:"version"`
}

type metadataEntry struct {
	Key   string `bson:"k"`
	Value string `bson:"v"`
}

func toDocument(e *domain.Endpoint, version int64) document {
	s := e.State()
	md := make([]metadataEntry, 0, len(s.Metadata))
	for _, k := range slices.Sorted(maps.Keys(s.Metadata)) {
		md = append(md, metadataEntry{Key: k, Value: s.Metadata[k]})
	}
	return document{
		ID:            s.ID,
		Account:       s.Account,
		Livemode:      s.Livemode,
		URL:           s.URL,
		EnabledEvents: s.EnabledEvents,
		Status:        string(s.Status),
		Secret:        s.Secret,
		APIVersion:    s.APIVersion,
		Description:   s.Description,
		Metadata:      md,
		Created:       s.Created.Unix(),
		Version:       version,
	}
}

func (d document) endpoint() *domain.Endpoint {
	md := make(map[string]string, len(d.Metadata))
	for _, kv := range d.Metadata {
		md[kv.Key] = kv.Value
	}
	return domain.Rehydrate(domain.State{
		ID:            d.ID,
		Account:       d.Account,
		Livemode:      d.Livemode,
		URL:           d.URL,
		EnabledEvents: d.EnabledEvents,
		Status:        domain.Status(d.Status),
		Secret:        d.Secret,
		APIVersion:    d.APIVersion,
		Description:   d.Description,
		Metadata:      md,
		Created:       time.Unix(d.Created, 0),
	})
}

// Create inserts the endpoint at version 1.
func (r *Repository) Create(ctx context.Context, e *domain.Endpoint) error {
	if _, err := r.coll.InsertOne(ctx, toDocument(e, 1)); err != nil {
		return fmt.Errorf("insert webhook endpoint: %w", err)
	}
	return nil
}

// find reads the document by _id alone and checks the owner in code. An _id lookup is a
// primary-key read on every store (on the embedded one it is the only filter that is), and
// account and mode never change, so checking them after the read is as safe as filtering.
func (r *Repository) find(ctx context.Context, id, account string, livemode bool) (document, error) {
	var d document
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return document{}, domain.ErrNotFound
	}
	if err != nil {
		return document{}, fmt.Errorf("find webhook endpoint: %w", err)
	}
	if d.Account != account || d.Livemode != livemode {
		return document{}, domain.ErrNotFound
	}
	return d, nil
}

// Get implements domain.Repository.
func (r *Repository) Get(ctx context.Context, id, account string, livemode bool) (*domain.Endpoint, error) {
	d, err := r.find(ctx, id, account, livemode)
	if err != nil {
		return nil, err
	}
	return d.endpoint(), nil
}

// Update implements domain.Repository: read, apply fn, replace only if the version read is
// still the stored one; otherwise another write won, so read again and retry.
func (r *Repository) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Endpoint) error) (*domain.Endpoint, error) {
	defer r.lock(id)()
	for attempt := range maxUpdateAttempts {
		d, err := r.find(ctx, id, account, livemode)
		if err != nil {
			return nil, err
		}
		e := d.endpoint()
		if err := fn(e); err != nil {
			return nil, err
		}
		res, err := r.coll.ReplaceOne(ctx,
			bson.D{{Key: "_id", Value: id}, {Key: "version", Value: d.Version}},
			toDocument(e, d.Version+1))
		if err != nil {
			return nil, fmt.Errorf("replace webhook endpoint: %w", err)
		}
		if res.MatchedCount == 1 {
			return e, nil
		}
		// Lost the race. A short random pause keeps writers that collided from colliding
		// again in lockstep.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 5)))):
		}
	}
	return nil, domain.ErrConflict
}

// Delete implements domain.Repository. The owner is checked on the document read by _id; the
// delete then names the _id alone, which is safe because ids are never reused and owners never
// change.
func (r *Repository) Delete(ctx context.Context, id, account string, livemode bool) error {
	defer r.lock(id)()
	if _, err := r.find(ctx, id, account, livemode); err != nil {
		return err
	}
	res, err := r.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return fmt.Errorf("delete webhook endpoint: %w", err)
	}
	if res.DeletedCount == 0 {
		return domain.ErrNotFound // deleted concurrently
	}
	return nil
}

// List implements domain.Repository.
func (r *Repository) List(ctx context.Context, account string, livemode bool, p listing.Params) ([]*domain.Endpoint, bool, error) {
	docs, hasMore, err := mongox.FindPage[document](ctx, r.coll,
		bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.Endpoint, len(docs))
	for i, d := range docs {
		out[i] = d.endpoint()
	}
	return out, hasMore, nil
}
