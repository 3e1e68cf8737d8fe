// Package outbox makes event publishing crash- and outage-proof. The events of a change are
// written into the changed aggregate's own document (its outbox, kept by libs/docstore) in the
// same single-document write as the change, published to the `events` queue right after (the
// fast path, Relay.Dispatch) and then cleared. A Relay publishes whatever that fast path missed
// (a crash between write and publish, Redis down): events are delayed, never lost. This
// package is the queue's side; it knows nothing of how a store keeps its outboxes. See
// docs/events.md.
package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtask"
	"rentalplatform/libs/stack"
)

// Doc is the stored form of one pending event inside an aggregate's outbox array. The object is
// kept as the JSON the API rendered at the moment of the change. Traceparent and Tracestate hold
// the trace context of the request that caused the event, so an event published late by the
// relay still joins that request's trace. Every field is a scalar so a Doc always encodes to the
// same bytes: events are removed from the outbox by whole-element match.
type Doc struct {
	ID             string  `bson:"id"`
	Type           string  `bson:"type"`
	Account        string  `bson:"account"`
	APIVersion     string  `bson:"api_version"`
	Created        int64   `bson:"created"`
	Livemode       bool    `bson:"livemode"`
	RequestID      *string `bson:"request_id"`
	IdempotencyKey *string `bson:"idempotency_key"`
	Object         string  `bson:"object"`
	Previous       string  `bson:"previous,omitempty"`
	Traceparent    string  `bson:"traceparent,omitempty"`
	Tracestate     string  `bson:"tracestate,omitempty"`
	// DestinationURL and DestinationSecret are the event's events.Destination, when it has one.
	DestinationURL    string `bson:"destination_url,omitempty"`
	DestinationSecret string `bson:"destination_secret,omitempty"`
}

// ToDoc returns the stored form of e, with the trace context of ctx.
func ToDoc(ctx context.Context, prop propagation.TextMapPropagator, e events.Event) Doc {
	d := Doc{
		ID: e.ID, Type: e.Type, Account: e.Account, APIVersion: e.APIVersion, Created: e.Created,
		Livemode: e.Livemode, RequestID: e.Request.ID, IdempotencyKey: e.Request.IdempotencyKey,
		Object: string(e.Data.Object), Previous: string(e.Data.PreviousAttributes),
	}
	if e.Destination != nil {
		d.DestinationURL, d.DestinationSecret = e.Destination.URL, e.Destination.Secret
	}
	if prop != nil {
		carrier := propagation.MapCarrier{}
		prop.Inject(ctx, carrier)
		d.Traceparent, d.Tracestate = carrier["traceparent"], carrier["tracestate"]
	}
	return d
}

// Event returns the event d stores.
func (d Doc) Event() events.Event {
	e := events.Event{
		ID: d.ID, Object: "event", Type: d.Type, Account: d.Account, APIVersion: d.APIVersion,
		Created: d.Created, Livemode: d.Livemode,
		Request: events.Request{ID: d.RequestID, IdempotencyKey: d.IdempotencyKey},
		Data:    events.Data{Object: json.RawMessage(d.Object)},
	}
	if d.Previous != "" {
		e.Data.PreviousAttributes = json.RawMessage(d.Previous)
	}
	if d.DestinationURL != "" {
		e.Destination = &events.Destination{URL: d.DestinationURL, Secret: d.DestinationSecret}
	}
	return e
}

// Batch is the pending events of one aggregate.
type Batch struct {
	AggregateID string
	Docs        []Doc
}

// Store is where a service keeps pending events: the outboxes of one collection's aggregates.
type Store interface {
	// Pending returns aggregates whose outbox has held events since before the cutoff.
	Pending(ctx context.Context, before time.Time, limit int) ([]Batch, error)
	// Clear removes the given events (as stored) from the aggregate's outbox, leaving any others.
	Clear(ctx context.Context, aggregateID string, docs []Doc) error
}

// Publisher enqueues events on the `events` queue.
type Publisher struct {
	producer *asynqx.Producer
	prop     propagation.TextMapPropagator
}

// NewPublisher returns a publisher enqueuing through producer.
func NewPublisher(producer *asynqx.Producer) *Publisher {
	return &Publisher{producer: producer, prop: producer.Propagator()}
}

// Publish enqueues the events: those raised under one trace context together (the events of
// one change, as a write stores them one after the other) as one batch task of up to
// eventtask.MaxBatch, an event alone as a single-event task with its id as the task id. A batch's
// task id is derived from its events' ids, so the same events published again (the relay
// after a fast path it could not see finish) conflict with a batch still queued. A task id
// conflict counts as published; the consumer is idempotent on each event's id for the rest.
func (p *Publisher) Publish(ctx context.Context, docs ...Doc) error {
	for len(docs) > 0 {
		n := 1
		for n < len(docs) && n < eventtask.MaxBatch && docs[n].Traceparent == docs[0].Traceparent && docs[n].Tracestate == docs[0].Tracestate {
			n++
		}
		if err := p.publish(ctx, docs[:n]); err != nil {
			return err
		}
		docs = docs[n:]
	}
	return nil
}

// publish enqueues one task for docs, which share their trace context.
func (p *Publisher) publish(ctx context.Context, docs []Doc) error {
	typ, id := eventtask.TaskType, docs[0].ID
	var payload []byte
	var attrs []attribute.KeyValue
	var err error
	if len(docs) == 1 {
		payload, err = eventtask.Marshal(docs[0].Event())
	} else {
		typ, id = eventtask.BatchTaskType, batchID(docs)
		evs := make([]events.Event, len(docs))
		for i, d := range docs {
			evs[i] = d.Event()
		}
		payload, err = eventtask.MarshalBatch(evs)
		attrs = eventtask.BatchAttributes(evs)
	}
	if err != nil {
		return err
	}
	// The publish joins the trace of the request that raised the events, also when the relay
	// publishes them late, outside any request.
	tctx := ctx
	if d := docs[0]; d.Traceparent != "" {
		tctx = p.prop.Extract(ctx, propagation.MapCarrier{"traceparent": d.Traceparent, "tracestate": d.Tracestate})
	}
	_, err = p.producer.EnqueueWith(tctx, typ, payload, attrs, asynq.Queue(eventtask.Queue), asynq.TaskID(id), asynq.MaxRetry(25))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("publish event %s (%d in its task): %w", docs[0].ID, len(docs), err)
	}
	return nil
}

// batchID is the task id of a batch: the first event's id and a digest of all of them.
func batchID(docs []Doc) string {
	h := sha256.New()
	for _, d := range docs {
		h.Write([]byte(d.ID))
		h.Write([]byte{0})
	}
	return docs[0].ID + ":" + strconv.Itoa(len(docs)) + ":" + hex.EncodeToString(h.Sum(nil)[:12])
}

// Relay publishes what the fast path missed, and runs the fast path itself.
type Relay struct {
	pub      *Publisher
	log      *slog.Logger
	interval time.Duration
	grace    time.Duration
	now      func() time.Time
	inflight sync.WaitGroup
	// published is what this relay published, for compaction and for skipping a second publish.
	published *Published
	// retention and epoch: see Retain (retention.go).
	retention time.Duration
	epoch     Epoch

	mu     sync.Mutex
	stores []Store
	// recovered are the stores (by index in stores) whose retained events were published
	// again since the relay last found the queue's marker missing (nil before: nothing to
	// recover).
	recovered map[int]bool
	// skipOwn: the marker was set by Claim, before this relay published anything, so what it
	// published since is in this Redis (Claim).
	skipOwn bool
}

// NewRelay returns a relay. Every interval it publishes the events that have waited in the
// outboxes of its stores (Add) longer than grace: younger ones are the fast path's.
func NewRelay(pub *Publisher, log *slog.Logger, interval, grace time.Duration) *Relay {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{pub: pub, log: log, interval: interval, grace: grace, now: time.Now, published: NewPublished()}
}

// Add makes the relay sweep s.
func (r *Relay) Add(s Store) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stores = append(r.stores, s)
}

// Entry returns the outbox entry of e raised under ctx, with the trace context the publisher
// propagates.
func (r *Relay) Entry(ctx context.Context, e events.Event) Doc { return ToDoc(ctx, r.pub.prop, e) }

// Published is the set of events this relay has published. Stores drop them from an
// aggregate's outbox in its next write, so a busy aggregate is cleared by the writes it gets
// anyway, and the relay clears such entries without publishing them again.
func (r *Relay) Published() *Published { return r.published }

// fastPathTimeout bounds a fast-path publish: with Redis unreachable it gives up and leaves the
// events to the relay instead of holding a goroutine for the client's whole retry budget.
const fastPathTimeout = 2 * time.Second

// Dispatch publishes events just written to an aggregate's outbox, in the background so the
// API response does not wait on Redis, then runs clear (when not nil) to remove them from the
// outbox; a store that leaves that to the aggregate's next write and the relay's sweep passes
// nil. Whatever fails is logged and left to the relay. ctx is the request's: its trace is kept,
// its cancellation is not.
func (r *Relay) Dispatch(ctx context.Context, docs []Doc, clear func(context.Context) error) {
	if len(docs) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	r.inflight.Add(1)
	go func() {
		defer r.inflight.Done()
		stack.Grow() // a goroutine per change, whose publish runs deep (package stack)
		ctx, cancel := context.WithTimeout(ctx, fastPathTimeout)
		defer cancel()
		if err := r.publish(ctx, docs); err != nil {
			r.log.WarnContext(ctx, "event publish deferred to the outbox relay", "event", docs[0].ID, "error", err.Error())
			return
		}
		if clear == nil {
			return
		}
		if err := clear(ctx); err != nil {
			r.log.WarnContext(ctx, "outbox clear deferred to the relay (the events are published)", "event", docs[0].ID, "error", err.Error())
		}
	}()
}

// Wait returns once the fast-path dispatches started so far have finished.
func (r *Relay) Wait() { r.inflight.Wait() }

// publish publishes docs and remembers them as published.
func (r *Relay) publish(ctx context.Context, docs []Doc) error {
	if err := r.pub.Publish(ctx, docs...); err != nil {
		return err
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	r.published.Add(ids...)
	return nil
}

// flush publishes what of b this process has not published yet, then clears b. It returns how
// many events it published.
func (r *Relay) flush(ctx context.Context, store Store, b Batch) (int, error) {
	var unpublished []Doc
	for _, d := range b.Docs {
		if !r.published.Has(d.ID) {
			unpublished = append(unpublished, d)
		}
	}
	if len(unpublished) > 0 {
		if err := r.publish(ctx, unpublished); err != nil {
			return 0, err
		}
	}
	if err := store.Clear(ctx, b.AggregateID, b.Docs); err != nil {
		return len(unpublished), fmt.Errorf("clear outbox of %s: %w", b.AggregateID, err)
	}
	return len(unpublished), nil
}

// Run publishes missed events until ctx ends, then waits for fast-path dispatches in flight.
func (r *Relay) Run(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	defer r.inflight.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.sweep(ctx)
		}
	}
}

// sweepPageSize and sweepPages bound one pass: 20 pages of 100 aggregates.
const (
	sweepPageSize = 100
	sweepPages    = 20
)

// Sweep runs one relay pass now and returns how many events it published (not counting those
// it only cleared, which the fast path had published).
func (r *Relay) Sweep(ctx context.Context) int { return r.sweep(ctx) }

func (r *Relay) sweep(ctx context.Context) int {
	published := 0
	cutoff := r.now().Add(-r.grace)
	r.mu.Lock()
	stores := slices.Clone(r.stores)
	r.mu.Unlock()
	if n, err := r.recoverLost(ctx, stores); err != nil {
		r.log.WarnContext(ctx, "outbox relay: publishing again the events a lost queue held", "events", n, "error", err.Error())
	}
	for _, s := range stores {
		// Page after page while pages come back full (a store that leaves the fast path's
		// clears to the relay has every aggregate written once in its outbox), up to a bound
		// per pass.
		for range sweepPages {
			batches, err := s.Pending(ctx, cutoff, sweepPageSize)
			if err != nil {
				r.log.WarnContext(ctx, "outbox relay: reading pending events", "error", err.Error())
				break
			}
			for _, b := range batches {
				n, err := r.flush(ctx, s, b)
				if err != nil {
					r.log.WarnContext(ctx, "outbox relay: publishing", "aggregate", b.AggregateID, "error", err.Error())
					return published // Redis is likely down; try again next tick
				}
				published += n
			}
			if len(batches) < sweepPageSize {
				break
			}
		}
	}
	if published > 0 {
		r.log.InfoContext(ctx, "outbox relay published missed events", "events", published)
	}
	return published
}
