package outbox

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Redis losing its data (a restart without persistence, a flush, the embedded Redis of the
// local platform dying with its launcher) takes with it the events published to the `events`
// queue that webhooks-svc has not stored yet: their outbox entries are gone or marked
// published, so no relay publishes them again. Retention closes that gap where published
// entries stay stored anyway (the embedded store, marks.go in libs/docstore): a write keeps
// the published entries of its aggregate raised within the retention window (the last
// RetainedPerAggregate of them) instead of dropping them, and each relay pass asks the queue's
// epoch marker whether Redis lost its data. When it has, the relay publishes again every event
// its stores retain from the window (RecentStore) before it sets the marker. The consumer is
// idempotent on the event id, so the events webhooks-svc had stored are not doubled.

// RetainedPerAggregate bounds the published entries an aggregate's outbox keeps: an aggregate
// written many times a second (an endpoint updated in a loop) would otherwise carry a window's
// worth of events in every write.
const RetainedPerAggregate = 8

// Epoch is the queue's marker of what it holds: missing when Redis lost its data since it was
// last set (or is new).
type Epoch interface {
	// Lost reports whether the marker is missing.
	Lost(ctx context.Context) (bool, error)
	// Mark sets the marker.
	Mark(ctx context.Context) error
}

// RecentStore is a Store that can list the events it retains.
type RecentStore interface {
	Store
	// Recent returns the aggregates holding events raised at or after since, published or not,
	// with those events.
	Recent(ctx context.Context, since time.Time) ([]Batch, error)
}

// Retain makes the relay keep published events for window (Compact) and publish them again
// when epoch reports the queue lost its data. Call it before the relay runs. A window of 0
// keeps nothing, and then there is nothing to publish again: the marker is never asked.
func (r *Relay) Retain(window time.Duration, epoch Epoch) {
	if window <= 0 {
		r.retention, r.epoch = 0, nil
		return
	}
	r.retention, r.epoch = window, epoch
}

// Compact returns an aggregate's outbox without its published events, keeping the order, and
// whether an entry is left to publish. Published are the events this relay published, and all
// of them when covered (the store knows them published, as from an earlier process). With
// retain (a store that keeps published entries until the aggregate's next write), published
// events raised within the retention window stay, the last RetainedPerAggregate of them.
func (r *Relay) Compact(box []Doc, covered, retain bool) (kept []Doc, pending bool) {
	if len(box) == 0 {
		return nil, false
	}
	if r == nil {
		return box, true
	}
	cutoff := int64(-1)
	if retain && r.retention > 0 {
		cutoff = r.now().Add(-r.retention).Unix() // Created is in seconds: the whole second stays
	}
	keep := make([]bool, len(box))
	retained := 0
	for i := len(box) - 1; i >= 0; i-- {
		d := box[i]
		switch {
		case !covered && !r.published.Has(d.ID):
			keep[i], pending = true, true
		case cutoff >= 0 && d.Created >= cutoff && retained < RetainedPerAggregate:
			keep[i] = true
			retained++
		}
	}
	for i, d := range box {
		if keep[i] {
			kept = append(kept, d)
		}
	}
	return kept, pending
}

// Claim is called once, before this process publishes anything (service.ConnectQueue). When
// the marker is missing it sets it at once and has every store recovered, as a pass finding it
// missing would, except for the events this process publishes from then on: those went into
// this Redis, which has not lost them. So a process starting on a new or emptied Redis (every
// start of the local platform, every test) publishes again only what earlier processes left
// retained, instead of what its own first second published too. An error (Redis unreachable)
// leaves the marker to the passes, which then publish everything retained again.
func (r *Relay) Claim(ctx context.Context) error {
	if r.epoch == nil {
		return nil
	}
	lost, err := r.epoch.Lost(ctx)
	if err != nil || !lost {
		return err
	}
	if err := r.epoch.Mark(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	r.recovered, r.skipOwn = map[int]bool{}, true
	r.mu.Unlock()
	r.log.WarnContext(ctx, "the events queue's marker was missing (a new, restarted or flushed Redis): the events retained from the window will be published again",
		"window", r.retention.String())
	return nil
}

// recoverLost publishes again the events the stores retain from the retention window when the
// queue lost its data, then sets the marker. It returns how many it published; on an error the
// marker stays unset and the next pass tries again.
//
// A service adds its stores to the relay as it opens them, which may be after the relay's first
// pass (opening a collection builds its indexes): a store added after a loss was found is
// recovered on the next pass, though the marker is set by then.
func (r *Relay) recoverLost(ctx context.Context, stores []Store) (int, error) {
	if r.epoch == nil || len(stores) == 0 {
		return 0, nil // nothing to publish again: the marker waits for the stores
	}
	lost, err := r.epoch.Lost(ctx)
	if err != nil {
		return 0, nil // unreachable: /readyz reports it, and the next pass asks again
	}
	r.mu.Lock()
	if lost {
		r.recovered, r.skipOwn = map[int]bool{}, false
	}
	skipOwn := r.skipOwn
	var todo []int // indexes in stores, which keeps the order stores were added in
	if r.recovered != nil {
		for i := range stores {
			if !r.recovered[i] {
				todo = append(todo, i)
			}
		}
	}
	r.mu.Unlock()
	if !lost && len(todo) == 0 {
		return 0, nil
	}
	since := r.now().Add(-r.retention)
	published := 0
	for _, i := range todo {
		n, err := r.republish(ctx, stores[i], since, skipOwn)
		published += n
		if err != nil {
			return published, err
		}
		r.mu.Lock()
		r.recovered[i] = true
		r.mu.Unlock()
	}
	if lost {
		if err := r.epoch.Mark(ctx); err != nil {
			return published, err
		}
	}
	if !lost && published == 0 {
		return 0, nil
	}
	// A warning: Redis lost what it held, which an operator wants to know about even when
	// nothing was lost with it.
	r.log.WarnContext(ctx, "the events queue's marker was missing (a new, restarted or flushed Redis): published again the events retained from the window",
		"window", r.retention.String(), "stores", len(todo), "events", published)
	return published, nil
}

// republish publishes the events s retains from since, if it retains any, but for those this
// relay published with skipOwn.
func (r *Relay) republish(ctx context.Context, s Store, since time.Time, skipOwn bool) (int, error) {
	rs, ok := s.(RecentStore)
	if !ok {
		return 0, nil
	}
	batches, err := rs.Recent(ctx, since)
	if err != nil {
		return 0, fmt.Errorf("events retained since %s: %w", since.Format(time.RFC3339), err)
	}
	published := 0
	for _, b := range batches {
		docs := slices.DeleteFunc(slices.Clone(b.Docs), func(d Doc) bool {
			return d.Created < since.Unix() || (skipOwn && r.published.Has(d.ID))
		})
		if len(docs) == 0 {
			continue
		}
		if err := r.publish(ctx, docs); err != nil {
			return published, err
		}
		published += len(docs)
	}
	return published, nil
}
