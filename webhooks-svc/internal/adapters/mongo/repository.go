// Package mongo stores webhook endpoints, events and deliveries in MongoDB: one document per
// endpoint in "webhook_endpoints" (with its outbox of events not yet published), per event in
// "events" and per delivery in "webhook_deliveries", each keyed by its id.
package mongo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Collection is the name of the endpoints collection.
const Collection = "webhook_endpoints"

// Repository implements domain.Repository.
type Repository struct {
	docs       *docstore.Collection[document]
	aggregates docstore.Aggregates[document, *domain.Endpoint]
	// byAccount keeps each account's endpoints in memory for the delivery path (Subscribed
	// and Cached); nil: they read the store.
	byAccount *docstore.ReadModel[document, scope]
}

// scope is what the delivery path reads endpoints by: an account, in a mode.
type scope struct {
	account  string
	livemode bool
}

// cachedScopes bounds the accounts (and modes) whose endpoints a process keeps in memory.
const cachedScopes = 10_000

// endpointDocCache bounds the endpoint documents a process keeps as last read or written, for
// the changes that follow (docstore.Options.Cache; each leaves after two minutes).
const endpointDocCache = 4096

var _ domain.Repository = (*Repository)(nil)

// NewRepository returns the endpoint store of db; emitter renders the events endpoints raise
// (nil: none are stored) and relay publishes them. cacheTTL is how long Subscribed and Cached
// may answer from memory before reading the store again (docstore.ReadModel); 0 turns the
// cache off.
func NewRepository(db *docstore.DB, relay *outbox.Relay, emitter events.Renderer[*domain.Endpoint], cacheTTL time.Duration) *Repository {
	r := &Repository{docs: docstore.NewCollection[document](db, Collection, docstore.Options{
		Indexes:  EndpointIndexes(),
		NotFound: domain.EndpointNotFound,
		Conflict: domainerr.LockTimeout("webhook endpoint"),
		Outbox:   relay,
		// Every change of an endpoint (an API update, a rotated secret, the health kept by the
		// delivery path, the relay's clear of its events) starts from the stored document: kept
		// here, those reads cost no find (on the embedded store, a JSON decode each).
		Cache: endpointDocCache,
		// Clients create them: a create retried with its Idempotency-Key stores none.
		IdempotentCreates: true,
	})}
	r.aggregates = docstore.Aggregates[document, *domain.Endpoint]{
		Docs:     r.docs,
		NotFound: domain.EndpointNotFound,
		Of:       document.endpoint,
		Set:      (*document).set,
		Events:   emitter,
	}
	if cacheTTL > 0 {
		r.byAccount = docstore.NewReadModel(r.docs, cacheTTL, cachedScopes,
			func(d *document) scope { return scope{d.Account, d.Livemode} }, r.load)
	}
	return r
}

// EnsureIndexes declares the indexes the queries need. Reads by id use the _id index; lists and
// the fan-out filter on account and mode and sort by _id.
func (r *Repository) EnsureIndexes(ctx context.Context) error {
	return r.docs.EnsureIndexes(ctx)
}

// EndpointIndexes are the list's (and the fan-out's) index.
func EndpointIndexes() []mongo.IndexModel {
	return []mongo.IndexModel{docstore.ListIndex("account_livemode_id")}
}

// document is the stored form. created is Unix seconds, the unit of the API and of the
// created[gte]/[lte] filters of docstore's pages.
type document struct {
	docstore.Meta         `bson:",inline"`
	Account               string            `bson:"account"`
	Livemode              bool              `bson:"livemode"`
	URL                   string            `bson:"url"`
	EnabledEvents         []string          `bson:"enabled_events"`
	Status                string            `bson:"status"`
	Secret                string            `bson:"secret"`
	PreviousSecret        string            `bson:"previous_secret,omitempty"`
	PreviousSecretExpires *time.Time        `bson:"previous_secret_expires,omitempty"`
	APIVersion            string            `bson:"api_version"`
	Description           string            `bson:"description,omitempty"`
	Metadata              docstore.Metadata `bson:"metadata"`
	Created               int64             `bson:"created"`
	FailingSince          *time.Time        `bson:"failing_since,omitempty"`
}

// set stores e's state in d (the store keeps d's version and outbox).
func (d *document) set(e *domain.Endpoint) {
	s := e.State()
	md := docstore.MetadataOf(s.Metadata)
	d.ID, d.Account, d.Livemode = s.ID, s.Account, s.Livemode
	d.URL, d.EnabledEvents, d.Status = s.URL, s.EnabledEvents, string(s.Status)
	d.Secret, d.PreviousSecret, d.PreviousSecretExpires = s.Secret, s.PreviousSecret, docstore.TimePtr(s.PreviousSecretExpires)
	d.APIVersion, d.Description, d.Metadata = s.APIVersion, s.Description, md
	d.Created, d.FailingSince, d.Deleted = s.Created.Unix(), docstore.TimePtr(s.FailingSince), s.Deleted
}

func (d document) endpoint() *domain.Endpoint {
	md := d.Metadata.Map()
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
		PreviousSecretExpires: docstore.TimeOf(d.PreviousSecretExpires),
		FailingSince:          docstore.TimeOf(d.FailingSince),
		Deleted:               d.Deleted,
	})
}

// Create implements domain.Repository.
func (r *Repository) Create(ctx context.Context, e *domain.Endpoint) (*domain.Endpoint, error) {
	ins, err := r.aggregates.InsertOnce(ctx, []*domain.Endpoint{e})
	if err != nil {
		return nil, fmt.Errorf("insert webhook endpoint: %w", err)
	}
	if !ins[0].New && !ins[0].Replay {
		return nil, fmt.Errorf("insert webhook endpoint: %s is stored already", e.ID())
	}
	return ins[0].Stored, nil
}

// OwnedBy implements docstore.Owned.
func (d document) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

// Get implements domain.Repository.
func (r *Repository) Get(ctx context.Context, id, account string, livemode bool) (*domain.Endpoint, error) {
	return r.aggregates.Get(ctx, id, account, livemode)
}

// Update implements domain.Repository.
func (r *Repository) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Endpoint) error) (*domain.Endpoint, error) {
	return r.aggregates.Update(ctx, id, account, livemode, fn)
}

// UpdateAny implements domain.Repository.
func (r *Repository) UpdateAny(ctx context.Context, id string, fn func(*domain.Endpoint) error) (*domain.Endpoint, error) {
	return r.aggregates.UpdateAny(ctx, id, fn)
}

// Cached implements domain.Repository: the endpoint from the cache, or from the store when the
// cache does not have it (it may have been created by another process since the cache was
// read).
func (r *Repository) Cached(ctx context.Context, id, account string, livemode bool) (*domain.Endpoint, error) {
	if r.byAccount == nil {
		return r.Get(ctx, id, account, livemode)
	}
	d, ok, err := r.byAccount.Find(ctx, scope{account, livemode}, id)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return r.Get(ctx, id, account, livemode)
	case d.Deleted:
		return nil, domain.EndpointNotFound(id)
	}
	return d.endpoint(), nil
}

// List implements domain.Repository.
func (r *Repository) List(ctx context.Context, account string, livemode bool, p listing.Params) ([]*domain.Endpoint, bool, error) {
	docs, hasMore, err := r.docs.Page(ctx, bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}, p)
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
	var docs []document
	var err error
	if r.byAccount != nil {
		docs, err = r.byAccount.Get(ctx, scope{account, livemode})
	} else {
		docs, err = r.load(ctx, scope{account, livemode})
	}
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

// load reads the account's endpoints in the mode, without their outboxes.
func (r *Repository) load(ctx context.Context, sc scope) ([]document, error) {
	docs, err := r.docs.Find(ctx, bson.D{{Key: "account", Value: sc.account}, {Key: "livemode", Value: sc.livemode}},
		options.Find().SetProjection(bson.D{{Key: "outbox", Value: 0}}))
	if err != nil {
		return nil, fmt.Errorf("load webhook endpoints: %w", err)
	}
	return docs, nil
}
