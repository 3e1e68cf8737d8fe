package mongo

import (
	"context"
	"fmt"
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

// EventsCollection is the name of the event store.
const EventsCollection = "events"

// Events implements domain.EventRepository. Event records raise no events of their own.
type Events struct {
	docs    *docstore.Collection[eventDoc]
	records docstore.Aggregates[eventDoc, *domain.EventRecord]
}

var _ domain.EventRepository = (*Events)(nil)

// docCacheSize bounds the events (and deliveries) a process keeps in memory: those of the last
// few thousand fan-outs, which is what the delivery path reads and writes.
const docCacheSize = 8192

// NewEvents returns the event store of db.
func NewEvents(db *docstore.DB) *Events {
	docs := docstore.NewCollection[eventDoc](db, EventsCollection, docstore.Options{
		Indexes:  EventIndexes(),
		NotFound: domain.EventNotFound,
		Conflict: domainerr.LockTimeout("event"),
		Cache:    docCacheSize,
	})
	return &Events{docs: docs, records: docstore.Aggregates[eventDoc, *domain.EventRecord]{
		Docs:     docs,
		NotFound: domain.EventNotFound,
		Of:       eventDoc.record,
		Set:      storeEvent,
	}}
}

// EnsureIndexes declares the list indexes (account and mode, then each filter, then _id for the
// newest-first order), the purge's index on created, and the TTL index where the store has
// them; it reports whether it does.
func (r *Events) EnsureIndexes(ctx context.Context, retention time.Duration) (ttl bool, err error) {
	if err := r.docs.EnsureIndexes(ctx); err != nil {
		return false, err
	}
	return r.docs.EnsureTTL(ctx, "created_at_ttl", "created_at", retention)
}

// EventIndexes are the list indexes (account and mode, then each filter, then _id for the
// newest-first order), the purge's index on created, and the sweep's of unfinished fan-outs.
func EventIndexes() []mongo.IndexModel {
	return []mongo.IndexModel{
		docstore.ListIndex("account_livemode_id"),
		docstore.ListIndex("account_livemode_type_id", "type"),
		docstore.ListIndex("account_livemode_family_id", "family"),
		docstore.ListIndex("account_livemode_delivery_success_id", "delivery_success"),
		docstore.Index("created", "created"),
		docstore.Index("fanned_out_created", "fanned_out", "created"),
	}
}

// eventDoc is a stored event: the event exactly as it waited in its service's outbox
// (outbox.Doc: the object and previous attributes as the JSON the emitting service rendered,
// byte for byte; created in Unix seconds, the API's unit and the list filters'), keyed by its id,
// plus what webhooks-svc keeps about it. created_at is the same instant as a date, for a TTL
// index. pending_webhooks and delivery_success are derived from targets on every write, for the
// list filters.
type eventDoc struct {
	docstore.Meta   `bson:",inline"`
	outbox.Doc      `bson:",inline"`
	Family          string                     `bson:"family"`
	CreatedAt       time.Time                  `bson:"created_at"`
	Targets         docstore.Packed[targetDoc] `bson:"targets"`
	PendingWebhooks int                        `bson:"pending_webhooks"`
	DeliverySuccess bool                       `bson:"delivery_success"`
	// FannedOut is domain.EventRecord.FannedOut. Records stored before it existed lack it, and
	// the sweep's query (fanned_out: false) passes them by: they were fanned out long ago.
	FannedOut bool `bson:"fanned_out"`
}

type targetDoc struct {
	Delivery string `bson:"delivery"`
	Endpoint string `bson:"endpoint"`
	Status   string `bson:"status"`
}

func toEventDoc(r *domain.EventRecord) eventDoc {
	e := r.Event
	targets := make([]targetDoc, len(r.Targets))
	for i, t := range r.Targets {
		targets[i] = targetDoc{Delivery: t.Delivery, Endpoint: t.Endpoint, Status: string(t.Status)}
	}
	return eventDoc{
		Meta: docstore.Meta{ID: e.ID}, Doc: outbox.ToDoc(context.Background(), nil, e), Family: eventtype.Family(e.Type),
		CreatedAt: time.Unix(e.Created, 0).UTC(),
		Targets:   targets, PendingWebhooks: r.PendingWebhooks(), DeliverySuccess: r.DeliverySuccess(),
		FannedOut: r.FannedOut,
	}
}

// storeEvent stores rec in d (the store keeps d's version).
func storeEvent(d *eventDoc, rec *domain.EventRecord) { *d = toEventDoc(rec) }

func (d eventDoc) record() *domain.EventRecord {
	e := d.Doc.Event()
	e.ID = d.Meta.ID
	targets := make([]domain.Target, len(d.Targets))
	for i, t := range d.Targets {
		targets[i] = domain.Target{Delivery: t.Delivery, Endpoint: t.Endpoint, Status: domain.DeliveryStatus(t.Status)}
	}
	r := &domain.EventRecord{Event: e, Targets: targets, FannedOut: d.FannedOut}
	r.Event.PendingWebhooks = r.PendingWebhooks()
	return r
}

// Insert implements domain.EventRepository.
func (r *Events) Insert(ctx context.Context, rec *domain.EventRecord) (bool, error) {
	return r.records.Insert(ctx, rec)
}

// OwnedBy implements docstore.Owned.
func (d eventDoc) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

// Get implements domain.EventRepository.
func (r *Events) Get(ctx context.Context, id, account string, livemode bool) (*domain.EventRecord, error) {
	return r.records.Get(ctx, id, account, livemode)
}

// Load implements domain.EventRepository.
func (r *Events) Load(ctx context.Context, id string) (*domain.EventRecord, error) {
	return r.records.Load(ctx, id)
}

// Event implements domain.EventRepository.
func (r *Events) Event(ctx context.Context, id string) (events.Event, error) {
	d, err := r.docs.Cached(ctx, id)
	if err != nil {
		return events.Event{}, err
	}
	return d.record().Event, nil
}

// List implements domain.EventRepository.
func (r *Events) List(ctx context.Context, account string, livemode bool, f domain.EventFilter, p listing.Params) ([]*domain.EventRecord, bool, error) {
	filter := bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}
	switch {
	case f.Type != "":
		filter = append(filter, bson.E{Key: "type", Value: f.Type})
	case f.Family != "":
		filter = append(filter, bson.E{Key: "family", Value: f.Family})
	case len(f.Types) > 0:
		filter = append(filter, bson.E{Key: "type", Value: bson.D{{Key: "$in", Value: f.Types}}})
	}
	if f.DeliverySuccess != nil {
		filter = append(filter, bson.E{Key: "delivery_success", Value: *f.DeliverySuccess})
	}
	docs, hasMore, err := r.docs.Page(ctx, filter, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.EventRecord, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, hasMore, nil
}

// SetDeliveryStatus implements domain.EventRepository. The deliveries of one event finish
// together (a fan-out to twenty endpoints finishes twenty deliveries within milliseconds), and
// each rewrites the event; the changes that queue for the event while one is being written are
// stored together by the next write (docstore's Update).
func (r *Events) SetDeliveryStatus(ctx context.Context, event, delivery string, s domain.DeliveryStatus) error {
	return r.SetDeliveryStatuses(ctx, event, map[string]domain.DeliveryStatus{delivery: s})
}

// SetDeliveryStatuses implements domain.EventRepository.
func (r *Events) SetDeliveryStatuses(ctx context.Context, event string, statuses map[string]domain.DeliveryStatus) error {
	if len(statuses) == 0 {
		return nil
	}
	_, err := r.records.UpdateAny(ctx, event, func(rec *domain.EventRecord) error {
		for del, st := range statuses {
			rec.SetStatus(del, st)
		}
		return nil
	})
	return err
}

// SetFannedOut implements domain.EventRepository.
func (r *Events) SetFannedOut(ctx context.Context, event string, statuses map[string]domain.DeliveryStatus) error {
	_, err := r.records.UpdateAny(ctx, event, func(rec *domain.EventRecord) error {
		rec.FannedOut = true
		for del, st := range statuses {
			rec.SetStatus(del, st)
		}
		return nil
	})
	return err
}

// Unfanned implements domain.EventRepository.
func (r *Events) Unfanned(ctx context.Context, before time.Time, limit int) ([]*domain.EventRecord, error) {
	docs, err := r.docs.Find(ctx, bson.D{
		{Key: "fanned_out", Value: false},
		{Key: "created", Value: bson.D{{Key: "$lt", Value: before.Unix()}}},
	}, options.Find().SetSort(bson.D{{Key: "created", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("events not fanned out: %w", err)
	}
	out := make([]*domain.EventRecord, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}

// Purge implements domain.EventRepository.
func (r *Events) Purge(ctx context.Context, before time.Time) (int64, error) {
	n, err := r.docs.DeleteMany(ctx, bson.D{{Key: "created", Value: bson.D{{Key: "$lt", Value: before.Unix()}}}})
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return n, nil
}
