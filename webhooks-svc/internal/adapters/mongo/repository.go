// Package mongo stores webhook endpoints, events and deliveries in MongoDB: one document per
// endpoint in "webhook_endpoints" (with its outbox of events not yet published), per event in
// "events" and per delivery in "webhook_deliveries", each keyed by its id.
package mongo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/mongox"
	"rentalplatform/libs/outbox"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Collection is the name of the endpoints collection.
const Collection = "webhook_endpoints"

// fieldDeleted marks a deleted endpoint (a tombstone): hidden from the API, kept only until the
// outbox has published its webhook_endpoint.deleted event, then removed by the outbox store.
const fieldDeleted = "deleted"

// Repository implements domain.Repository. Writes to one endpoint take its stripe lock and
// replace on the version read (see stripes); the outbox store's clears take the same lock.
type Repository struct {
	coll  *mongo.Collection
	locks *stripes
	srv   *mongox.Server
	prop  propagation.TextMapPropagator
	now   func() time.Time
	snaps *snapshots // nil: Subscribed and Cached read the store
	// published, when set, is the relay's record of published events: every write drops them
	// from the outbox it stores (outbox.Published.Compact).
	published *outbox.Published
}

var _ domain.Repository = (*Repository)(nil)

// NewRepository returns a repository over db. prop writes the trace context of the request
// that raised an event into its outbox entry (nil: none). cacheTTL is how long Subscribed and
// Cached may answer from memory before reading the store again (see snapshots); 0 turns the
// cache off.
func NewRepository(db *mongo.Database, prop propagation.TextMapPropagator, cacheTTL time.Duration) *Repository {
	r := &Repository{coll: db.Collection(Collection), locks: newStripes(), srv: mongox.NewServer(db), prop: prop, now: time.Now}
	if cacheTTL > 0 {
		r.snaps = newSnapshots(r.coll, cacheTTL, r.now)
	}
	return r
}

// CompactWith makes every write of an endpoint drop, from its outbox, the events p records as
// published: a busy endpoint is then cleared by its own writes instead of by the relay's clears
// queueing behind them. Call it before the repository is used (the relay is built on the
// repository's outbox store, so it cannot be passed to NewRepository).
func (r *Repository) CompactWith(p *outbox.Published) { r.published = p }

// written tells the cache about a document this process stored.
func (r *Repository) written(d document) {
	if r.snaps != nil {
		r.snaps.put(d)
	}
}

// OutboxStore is the outbox of the endpoints, for the relay and the fast path. Its clears are
// serialised with this repository's writes, and it removes a deleted endpoint once its events
// are out.
func (r *Repository) OutboxStore() outbox.MongoStore {
	return outbox.MongoStore{Coll: r.coll, Lock: r.locks.lock, TryLock: r.locks.tryLock, Tombstone: fieldDeleted, Server: r.srv}
}

// OutboxDocs returns the outbox entries Create and Update store for events raised under ctx;
// the fast path clears exactly these.
func (r *Repository) OutboxDocs(ctx context.Context, evs []events.Event) []outbox.Doc {
	docs := make([]outbox.Doc, len(evs))
	for i, e := range evs {
		docs[i] = outbox.ToDoc(ctx, r.prop, e)
	}
	return docs
}

// EnsureIndexes declares the indexes the queries need. Reads by id use the _id index; lists and
// the fan-out filter on account and mode and sort by _id; the relay scans outbox_since.
func (r *Repository) EnsureIndexes(ctx context.Context) error {
	if err := mongox.EnsureIndexes(ctx, r.coll, mongo.IndexModel{
		Keys:    bson.D{{Key: "account", Value: 1}, {Key: "livemode", Value: 1}, {Key: "_id", Value: -1}},
		Options: options.Index().SetName("account_livemode_id"),
	}); err != nil {
		return err
	}
	return r.OutboxStore().EnsureIndexes(ctx)
}

// document is the stored form. created is Unix seconds, the unit of the API and of the
// created[gte]/[lte] filters of mongox.FindPage. version counts writes, for conditional
// replaces. Metadata is a list of pairs rather than a subdocument because its keys are the
// client's: a key with a dot, a leading $ or a NUL is not a valid field name on every store.
type document struct {
	ID                    string          `bson:"_id"`
	Account               string          `bson:"account"`
	Livemode              bool            `bson:"livemode"`
	URL                   string          `bson:"url"`
	EnabledEvents         []string        `bson:"enabled_events"`
	Status                string          `bson:"status"`
	Secret                string          `bson:"secret"`
	PreviousSecret        string          `bson:"previous_secret,omitempty"`
	PreviousSecretExpires *time.Time      `bson:"previous_secret_expires,omitempty"`
	APIVersion            string          `bson:"api_version"`
	Description           string          `bson:"description,omitempty"`
	Metadata              []metadataEntry `bson:"metadata"`
	Created               int64           `bson:"created"`
	FailingSince          *time.Time      `bson:"failing_since,omitempty"`
	Deleted               bool            `bson:"deleted,omitempty"`
	Outbox                []outbox.Doc    `bson:"outbox,omitempty"`
	OutboxSince           *time.Time      `bson:"outbox_since,omitempty"`
	Version               int64           `bson:"version"`
}

type metadataEntry struct {
	Key   string `bson:"k"`
	Value string `bson:"v"`
}

// toDocument is the stored form of e at version, with the outbox given.
func toDocument(e *domain.Endpoint, version int64, box []outbox.Doc, since *time.Time) document {
	s := e.State()
	md := make([]metadataEntry, 0, len(s.Metadata))
	for _, k := range slices.Sorted(maps.Keys(s.Metadata)) {
		md = append(md, metadataEntry{Key: k, Value: s.Metadata[k]})
	}
	if len(box) == 0 {
		box, since = nil, nil
	}
	return document{
		ID:                    s.ID,
		Account:               s.Account,
		Livemode:              s.Livemode,
		URL:                   s.URL,
		EnabledEvents:         s.EnabledEvents,
		Status:                string(s.Status),
		Secret:                s.Secret,
		PreviousSecret:        s.PreviousSecret,
		PreviousSecretExpires: timePtr(s.PreviousSecretExpires),
		APIVersion:            s.APIVersion,
		Description:           s.Description,
		Metadata:              md,
		Created:               s.Created.Unix(),
		FailingSince:          timePtr(s.FailingSince),
		Deleted:               s.Deleted,
		Outbox:                box,
		OutboxSince:           since,
		Version:               version,
	}
}

func (d document) endpoint() *domain.Endpoint {
	md := make(map[string]string, len(d.Metadata))
	for _, kv := range d.Metadata {
		md[kv.Key] = kv.Value
	}
	return domain.Rehydrate(domain.State{
		ID:                    d.ID,
		Account:               d.Account,
		Livemode:              d.Livemode,
		URL:                   d.URL,
		EnabledEvents:         d.EnabledEvents,
		Status:                domain.Status(d.Status),
		Secret:                d.Secret,
		APIVersion:            d.APIVersion,
		Description:           d.Description,
		Metadata:              md,
		Created:               time.Unix(d.Created, 0),
		PreviousSecret:        d.PreviousSecret,
		PreviousSecretExpires: timeOf(d.PreviousSecretExpires),
		FailingSince:          timeOf(d.FailingSince),
		Deleted:               d.Deleted,
	})
}

// Create inserts the endpoint at version 1, with the events it raised in its outbox.
func (r *Repository) Create(ctx context.Context, e *domain.Endpoint) error {
	box, since := outbox.Append(nil, nil, r.now().UTC(), r.OutboxDocs(ctx, e.NewEvents())...)
	d := toDocument(e, 1, box, since)
	if _, err := r.coll.InsertOne(ctx, d); err != nil {
		return fmt.Errorf("insert webhook endpoint: %w", err)
	}
	r.written(d)
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
	if d.Account != account || d.Livemode != livemode || d.Deleted {
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
// still the stored one (appending fn's events to the outbox); otherwise another write won, so
// read again and retry.
func (r *Repository) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Endpoint) error) (*domain.Endpoint, error) {
	defer r.locks.lock(id)()
	var out *domain.Endpoint
	var stored document
	err := replaceLoop(ctx, r.srv, r.coll, id, domain.ErrConflict, func() (any, int64, error) {
		d, err := r.find(ctx, id, account, livemode)
		if err != nil {
			return nil, 0, err
		}
		e := d.endpoint()
		if err := fn(e); err != nil {
			return nil, 0, err
		}
		out = e
		box, since := r.published.Compact(d.Outbox, d.OutboxSince)
		box, since = outbox.Append(box, since, r.now().UTC(), r.OutboxDocs(ctx, e.NewEvents())...)
		stored = toDocument(e, d.Version+1, box, since)
		return stored, d.Version, nil
	})
	if err != nil {
		return nil, err
	}
	r.written(stored)
	return out, nil
}

// Cached implements domain.Repository: the endpoint from the cache, or from the store when the
// cache does not have it (it may have been created by another process since the cache was
// read).
func (r *Repository) Cached(ctx context.Context, id, account string, livemode bool) (*domain.Endpoint, error) {
	if r.snaps == nil {
		return r.Get(ctx, id, account, livemode)
	}
	docs, err := r.snaps.get(ctx, scope{account, livemode})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if d.ID == id {
			if d.Deleted {
				return nil, domain.ErrNotFound
			}
			return d.endpoint(), nil
		}
	}
	return r.Get(ctx, id, account, livemode)
}

// notDeleted filters out tombstones.
var notDeleted = bson.E{Key: fieldDeleted, Value: bson.D{{Key: "$ne", Value: true}}}

// List implements domain.Repository.
func (r *Repository) List(ctx context.Context, account string, livemode bool, p listing.Params) ([]*domain.Endpoint, bool, error) {
	docs, hasMore, err := mongox.FindPage[document](ctx, r.coll,
		bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}, notDeleted}, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.Endpoint, len(docs))
	for i, d := range docs {
		out[i] = d.endpoint()
	}
	return out, hasMore, nil
}

// Subscribed implements domain.Repository. An account has a handful of endpoints, so the type
// is matched in code rather than in the query.
func (r *Repository) Subscribed(ctx context.Context, account string, livemode bool, eventType string) ([]*domain.Endpoint, error) {
	if r.snaps != nil {
		docs, err := r.snaps.get(ctx, scope{account, livemode})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(docs, func(a, b document) int { return strings.Compare(a.ID, b.ID) })
		var out []*domain.Endpoint
		for _, d := range docs {
			if !d.Deleted && d.Status == string(domain.StatusEnabled) && eventtype.Matches(d.EnabledEvents, eventType) {
				out = append(out, d.endpoint())
			}
		}
		return out, nil
	}
	cur, err := r.coll.Find(ctx, bson.D{
		{Key: "account", Value: account}, {Key: "livemode", Value: livemode},
		{Key: "status", Value: string(domain.StatusEnabled)}, notDeleted,
	}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetProjection(bson.D{{Key: "outbox", Value: 0}}))
	if err != nil {
		return nil, fmt.Errorf("find subscribed endpoints: %w", err)
	}
	var docs []document
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("find subscribed endpoints: decode: %w", err)
	}
	var out []*domain.Endpoint
	for _, d := range docs {
		if eventtype.Matches(d.EnabledEvents, eventType) {
			out = append(out, d.endpoint())
		}
	}
	return out, nil
}
