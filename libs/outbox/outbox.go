// Package outbox makes event publishing crash- and outage-proof. A service writes the events of
// a change into the changed aggregate's own document (its `outbox` array) in the same
// single-document write as the change, publishes them to the `events` queue right after, and
// clears them. A Relay publishes whatever that fast path missed (a crash between write and
// publish, Redis down): events are delayed, never lost. See docs/events.md.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
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
}

// ToDoc returns the stored form of e, with the trace context of ctx.
func ToDoc(ctx context.Context, prop propagation.TextMapPropagator, e events.Event) Doc {
	d := Doc{
		ID: e.ID, Type: e.Type, Account: e.Account, APIVersion: e.APIVersion, Created: e.Created,
		Livemode: e.Livemode, RequestID: e.Request.ID, IdempotencyKey: e.Request.IdempotencyKey,
		Object: string(e.Data.Object), Previous: string(e.Data.PreviousAttributes),
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
	return e
}

// Batch is the pending events of one aggregate.
type Batch struct {
	AggregateID string
	Docs        []Doc
}

// Store is where a service keeps pending events.
type Store interface {
	// Pending returns aggregates whose outbox has held events since before the cutoff.
	Pending(ctx context.Context, before time.Time, limit int) ([]Batch, error)
	// Clear removes the given events (as stored) from the aggregate's outbox, leaving any others.
	Clear(ctx context.Context, aggregateID string, docs []Doc) error
}

// Enqueuer is the part of *asynq.Client the publisher uses.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Publisher enqueues events on the `events` queue.
type Publisher struct {
	client Enqueuer
	prop   propagation.TextMapPropagator
}

// NewPublisher returns a publisher enqueuing through client.
func NewPublisher(client Enqueuer, prop propagation.TextMapPropagator) *Publisher {
	return &Publisher{client: client, prop: prop}
}

// Publish enqueues each event with its id as the task id. An event already queued (a task id
// conflict) counts as published; the consumer is idempotent on the id for the rest.
func (p *Publisher) Publish(ctx context.Context, docs ...Doc) error {
	for _, d := range docs {
		payload, err := events.Marshal(d.Event())
		if err != nil {
			return err
		}
		tctx := ctx
		if d.Traceparent != "" {
			tctx = p.prop.Extract(ctx, propagation.MapCarrier{"traceparent": d.Traceparent, "tracestate": d.Tracestate})
		}
		task := asynqx.NewTask(tctx, p.prop, events.TaskType, payload,
			asynq.Queue(events.Queue), asynq.TaskID(d.ID), asynq.MaxRetry(25))
		if _, err := p.client.EnqueueContext(ctx, task); err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
			return fmt.Errorf("publish event %s: %w", d.ID, err)
		}
	}
	return nil
}

// Relay publishes what the fast path missed, and runs the fast path itself.
type Relay struct {
	pub      *Publisher
	log      *slog.Logger
	interval time.Duration
	grace    time.Duration
	stores   []Store
	now      func() time.Time
	inflight sync.WaitGroup
	// published is what this relay published, for Compact and for skipping a second publish.
	published *Published
}

// NewRelay returns a relay over stores. Every interval it publishes events that have waited in
// an outbox longer than grace (younger ones are the fast path's).
func NewRelay(pub *Publisher, log *slog.Logger, interval, grace time.Duration, stores ...Store) *Relay {
	return &Relay{pub: pub, log: log, interval: interval, grace: grace, stores: stores, now: time.Now, published: NewPublished()}
}

// Published is the set of events this relay has published; repositories pass it to Compact in
// their writes, so an aggregate's next write clears what the fast path published.
func (r *Relay) Published() *Published { return r.published }

// TryClearer is a Store whose Clear can give way: TryClear clears only if it can do so without
// waiting for a writer of the aggregate, and reports whether it did. A writer that holds the
// aggregate compacts its outbox itself (Published.Compact), and the relay clears what is left.
type TryClearer interface {
	TryClear(ctx context.Context, aggregateID string, docs []Doc) (bool, error)
}

// ClearDeferrer is a Store that may rather not be cleared by the fast path: when DefersClear
// is true, published events stay in the outbox until the aggregate's next write drops them
// (Published.Compact) or the relay clears them after its grace period, without publishing
// them again. Only a store that one process owns may defer: another process's relay would
// publish the entries a second time.
type ClearDeferrer interface {
	DefersClear(ctx context.Context) bool
}

// fastPathTimeout bounds a fast-path publish: with Redis unreachable it gives up and leaves the
// events to the relay instead of holding a goroutine for the client's whole retry budget.
const fastPathTimeout = 2 * time.Second

// Dispatch publishes the events just written to an aggregate and clears them, in the
// background so the API response does not wait on Redis. Whatever fails is logged and left in
// the outbox for the relay. ctx is the request's: its trace is kept, its cancellation is not.
func (r *Relay) Dispatch(ctx context.Context, store Store, aggregateID string, docs []Doc) {
	if len(docs) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	r.inflight.Add(1)
	go func() {
		defer r.inflight.Done()
		ctx, cancel := context.WithTimeout(ctx, fastPathTimeout)
		defer cancel()
		if err := r.publish(ctx, docs); err != nil {
			r.log.WarnContext(ctx, "event publish deferred to the outbox relay", "aggregate", aggregateID, "error", err.Error())
			return
		}
		if d, ok := store.(ClearDeferrer); ok && d.DefersClear(ctx) {
			return
		}
		// A busy aggregate is not waited for: its next write drops the published entries
		// (Compact), and the relay clears whatever is still there after its grace period.
		var err error
		if tc, ok := store.(TryClearer); ok {
			// Waits between attempts on an aggregate that is being written: long enough for a
			// write or two to finish, short enough that a busy aggregate is left to compact
			// itself rather than queue a clear behind its writers.
			for _, pause := range []time.Duration{5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, 0} {
				if cleared, terr := tc.TryClear(ctx, aggregateID, docs); cleared || terr != nil {
					err = terr
					break
				}
				time.Sleep(pause)
			}
		} else {
			err = store.Clear(ctx, aggregateID, docs)
		}
		if err != nil {
			r.log.WarnContext(ctx, "outbox clear deferred to the relay (the events are published)", "aggregate", aggregateID, "error", err.Error())
		}
	}()
}

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
	for _, s := range r.stores {
		// Page after page while pages come back full (a store that defers its clears leaves
		// every aggregate written once to the relay), up to a bound per pass.
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
