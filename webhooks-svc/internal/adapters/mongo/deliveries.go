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
	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

// DeliveriesCollection is the name of the deliveries collection.
const DeliveriesCollection = "webhook_deliveries"

// Deliveries implements domain.DeliveryRepository. Deliveries raise no events.
type Deliveries struct {
	docs       *docstore.Collection[deliveryDoc]
	aggregates docstore.Aggregates[deliveryDoc, *domain.Delivery]
}

var _ domain.DeliveryRepository = (*Deliveries)(nil)

// NewDeliveries returns the delivery store of db.
func NewDeliveries(db *docstore.DB) *Deliveries {
	docs := docstore.NewCollection[deliveryDoc](db, DeliveriesCollection, docstore.Options{
		Indexes:  DeliveryIndexes(),
		NotFound: domain.DeliveryNotFound,
		Conflict: domainerr.LockTimeout("webhook delivery"),
		Cache:    docCacheSize,
	})
	return &Deliveries{docs: docs, aggregates: docstore.Aggregates[deliveryDoc, *domain.Delivery]{
		Docs:     docs,
		NotFound: domain.DeliveryNotFound,
		Of:       deliveryDoc.delivery,
		Set:      storeDelivery,
	}}
}

// EnsureIndexes declares deliveryIndexes and the retention index where the store has TTL
// indexes; it reports whether it does.
func (r *Deliveries) EnsureIndexes(ctx context.Context, retention time.Duration) (bool, error) {
	if err := r.docs.EnsureIndexes(ctx); err != nil {
		return false, err
	}
	return r.docs.EnsureTTL(ctx, "event_created_at_ttl", "event_created_at", retention)
}

// DeliveryIndexes are the unique (event, endpoint) index that keeps a redelivered event from
// doubling its deliveries; one list index per filter of List (account and mode, the filter's
// field, then _id for the newest-first order; filters given together are served by one of them
// and checked on the documents it selects); the indexes of an endpoint's pending deliveries and
// of overdue ones; and the purge's.
func DeliveryIndexes() []mongo.IndexModel {
	unique := docstore.Index("event_endpoint", "event", "endpoint")
	unique.Options.SetUnique(true)
	return []mongo.IndexModel{
		unique,
		docstore.ListIndex("account_livemode_id"),
		docstore.ListIndex("account_livemode_event_id", "event"),
		docstore.ListIndex("account_livemode_endpoint_id", "endpoint"),
		docstore.ListIndex("account_livemode_status_id", "status"),
		docstore.ListIndex("account_livemode_created_id", "created"),
		docstore.Index("endpoint_status", "endpoint", "status"),
		docstore.Index("status_next_attempt_at", "status", "next_attempt_at"),
		docstore.Index("event_created_at", "event_created_at"),
	}
}

// deliveryDoc is a stored delivery. event_created_at lets the retention purge (or a TTL index)
// remove deliveries with their event; next_attempt_at is null when no attempt is scheduled.
type deliveryDoc struct {
	docstore.Meta  `bson:",inline"`
	Event          string                      `bson:"event"`
	Endpoint       string                      `bson:"endpoint"`
	Account        string                      `bson:"account"`
	Livemode       bool                        `bson:"livemode"`
	EventCreatedAt time.Time                   `bson:"event_created_at"`
	Created        time.Time                   `bson:"created"`
	Status         string                      `bson:"status"`
	Attempts       docstore.Packed[attemptDoc] `bson:"attempts"`
	Seq            int                         `bson:"seq"`
	NextAttemptAt  *time.Time                  `bson:"next_attempt_at"`
	Failures       int                         `bson:"failures"`
	OneOff         bool                        `bson:"one_off,omitempty"`
}

// attemptDoc is a stored attempt. Attempts stored before attempts had a code also have an
// "error" field with the sender's own error text; it is never read (it may name internal
// addresses: the domain knows such attempts by their status), and a rewrite of the delivery
// drops it.
type attemptDoc struct {
	At         time.Time `bson:"at"`
	DurationMS int64     `bson:"duration_ms"`
	Status     int       `bson:"status,omitempty"`
	ErrorCode  string    `bson:"error_code,omitempty"`
}

func toDeliveryDoc(d *domain.Delivery) deliveryDoc {
	s := d.State()
	attempts := make([]attemptDoc, len(s.Attempts))
	for i, a := range s.Attempts {
		attempts[i] = attemptDoc{At: a.At.UTC(), DurationMS: a.Duration.Milliseconds(), Status: a.Status, ErrorCode: string(a.ErrorCode)}
	}
	return deliveryDoc{
		Meta: docstore.Meta{ID: s.ID}, Event: s.Event, Endpoint: s.Endpoint, Account: s.Account, Livemode: s.Livemode,
		EventCreatedAt: s.EventCreated.UTC(), Created: s.Created.UTC(),
		Status: string(s.Status), Attempts: attempts, Seq: s.Seq, NextAttemptAt: docstore.TimePtr(s.NextAttemptAt),
		Failures: s.Failures, OneOff: s.OneOff,
	}
}

func (d deliveryDoc) delivery() *domain.Delivery {
	attempts := make([]domain.Attempt, len(d.Attempts))
	for i, a := range d.Attempts {
		attempts[i] = domain.Attempt{At: a.At, Duration: time.Duration(a.DurationMS) * time.Millisecond, Status: a.Status, ErrorCode: domain.AttemptErrorCode(a.ErrorCode)}
	}
	return domain.RehydrateDelivery(domain.DeliveryState{
		ID: d.ID, Event: d.Event, Endpoint: d.Endpoint, Account: d.Account, Livemode: d.Livemode,
		EventCreated: d.EventCreatedAt, Created: d.Created,
		Status: domain.DeliveryStatus(d.Status), Attempts: attempts, Seq: d.Seq, NextAttemptAt: docstore.TimeOf(d.NextAttemptAt),
		Failures: d.Failures, OneOff: d.OneOff,
	})
}

// Create implements domain.DeliveryRepository.
func (r *Deliveries) Create(ctx context.Context, d *domain.Delivery) (bool, error) {
	return r.aggregates.Insert(ctx, d)
}

// CreateAll implements domain.DeliveryRepository, grouped with concurrent fan-outs.
func (r *Deliveries) CreateAll(ctx context.Context, ds []*domain.Delivery) ([]bool, error) {
	return r.aggregates.InsertAll(ctx, ds)
}

// OwnedBy implements docstore.Owned.
func (d deliveryDoc) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

// Get implements domain.DeliveryRepository.
func (r *Deliveries) Get(ctx context.Context, id, account string, livemode bool) (*domain.Delivery, error) {
	return r.aggregates.Get(ctx, id, account, livemode)
}

// Load implements domain.DeliveryRepository.
func (r *Deliveries) Load(ctx context.Context, id string) (*domain.Delivery, error) {
	return r.aggregates.Load(ctx, id)
}

// Cached implements domain.DeliveryRepository.
func (r *Deliveries) Cached(ctx context.Context, id string) (*domain.Delivery, error) {
	d, err := r.docs.Cached(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.delivery(), nil
}

// Update implements domain.DeliveryRepository.
func (r *Deliveries) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Delivery) error) (*domain.Delivery, error) {
	return r.aggregates.Update(ctx, id, account, livemode, fn)
}

// UpdateAny implements domain.DeliveryRepository.
func (r *Deliveries) UpdateAny(ctx context.Context, id string, fn func(*domain.Delivery) error) (*domain.Delivery, error) {
	return r.aggregates.UpdateAny(ctx, id, fn)
}

// storeDelivery stores del in d (the store keeps d's version and outbox).
func storeDelivery(d *deliveryDoc, del *domain.Delivery) { *d = toDeliveryDoc(del) }

func (r *Deliveries) page(ctx context.Context, filter bson.D, p listing.Params) ([]*domain.Delivery, bool, error) {
	docs, hasMore, err := r.docs.Page(ctx, filter, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.Delivery, len(docs))
	for i, d := range docs {
		out[i] = d.delivery()
	}
	return out, hasMore, nil
}

// List implements domain.DeliveryRepository.
func (r *Deliveries) List(ctx context.Context, account string, livemode bool, f domain.DeliveryFilter, p listing.Params) ([]*domain.Delivery, bool, error) {
	filter := bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}
	if f.Endpoint != "" {
		filter = append(filter, bson.E{Key: "endpoint", Value: f.Endpoint})
	}
	if f.Event != "" {
		filter = append(filter, bson.E{Key: "event", Value: f.Event})
	}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: string(f.Status)})
	}
	// created is stored as a date, not in the Unix seconds docstore's pages compare, so the
	// bounds go into the filter here and the page goes on without them.
	if created := createdBounds(p.CreatedGTE, p.CreatedLTE); created != nil {
		filter = append(filter, bson.E{Key: "created", Value: created})
	}
	p.CreatedGTE, p.CreatedLTE = nil, nil
	return r.page(ctx, filter, p)
}

// maxCreated is the latest creation time the bounds compare with (the last second of year
// 9999): a BSON date is milliseconds in an int64, which a bound of any int64 seconds would
// overflow.
const maxCreated = 253402300799

// createdBounds is the condition on created of the API's created[gte] and created[lte] (Unix
// seconds, inclusive); nil when neither is given. The API shows created truncated to the
// second, so created[lte]=t takes every delivery of that second: created before t+1.
func createdBounds(gte, lte *int64) bson.D {
	var out bson.D
	if gte != nil {
		out = append(out, bson.E{Key: "$gte", Value: time.Unix(min(*gte, maxCreated), 0).UTC()})
	}
	if lte != nil {
		out = append(out, bson.E{Key: "$lt", Value: time.Unix(min(*lte, maxCreated)+1, 0).UTC()})
	}
	return out
}

func (r *Deliveries) findAll(ctx context.Context, filter bson.D, opts ...options.Lister[options.FindOptions]) ([]*domain.Delivery, error) {
	docs, err := r.docs.Find(ctx, filter, opts...)
	if err != nil {
		return nil, err
	}
	out := make([]*domain.Delivery, len(docs))
	for i, d := range docs {
		out[i] = d.delivery()
	}
	return out, nil
}

// Pending implements domain.DeliveryRepository.
func (r *Deliveries) Pending(ctx context.Context, endpoint string) ([]*domain.Delivery, error) {
	return r.findAll(ctx, bson.D{{Key: "endpoint", Value: endpoint}, {Key: "status", Value: string(domain.DeliveryPending)}})
}

// Overdue implements domain.DeliveryRepository.
func (r *Deliveries) Overdue(ctx context.Context, before time.Time, limit int) ([]*domain.Delivery, error) {
	return r.findAll(ctx, bson.D{
		{Key: "status", Value: string(domain.DeliveryPending)},
		{Key: "next_attempt_at", Value: bson.D{{Key: "$lt", Value: before.UTC()}}},
	}, options.Find().SetLimit(int64(limit)))
}

// Purge implements domain.DeliveryRepository.
func (r *Deliveries) Purge(ctx context.Context, eventsBefore time.Time) (int64, error) {
	n, err := r.docs.DeleteMany(ctx, bson.D{{Key: "event_created_at", Value: bson.D{{Key: "$lt", Value: eventsBefore.UTC()}}}})
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries: %w", err)
	}
	return n, nil
}
