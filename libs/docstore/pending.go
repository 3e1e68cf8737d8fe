package docstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/outbox"
)

// pendingIndex is, on a store one process owns (the embedded one), the documents whose outbox
// holds events and since when, kept as the process writes them. The relay's sweep (Pending)
// then reads those documents by _id, the only lookup that store serves from an index, instead
// of a query on outbox_since, which it evaluates over every document of the collection: a
// collection of many aggregates (verification sessions) made that scan, every relay interval,
// the store's largest cost. It is primed by one such scan, at the first sweep, for what an
// earlier process left behind; a purge (DeleteMany) primes it again.
type pendingIndex struct {
	mu     sync.Mutex
	primed bool
	since  map[string]time.Time
}

func newPendingIndex() *pendingIndex { return &pendingIndex{since: map[string]time.Time{}} }

// note records a document as stored: pending since since, or not pending when since is nil.
func (p *pendingIndex) note(id string, since *time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if since == nil {
		delete(p.since, id)
	} else {
		p.since[id] = *since
	}
}

// unprime makes the next sweep scan the collection again.
func (p *pendingIndex) unprime() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.primed = false
}

// due returns up to limit documents pending since before or earlier, oldest first, and
// whether the index is primed (when it is not, it returns none).
func (p *pendingIndex) due(before time.Time, limit int) ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.primed {
		return nil, false
	}
	type entry struct {
		id    string
		since time.Time
	}
	var out []entry
	for id, t := range p.since {
		if !t.After(before) {
			out = append(out, entry{id, t})
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return cmp.Or(a.since.Compare(b.since), cmp.Compare(a.id, b.id)) })
	ids := make([]string, 0, min(len(out), limit))
	for _, e := range out[:min(len(out), limit)] {
		ids = append(ids, e.id)
	}
	return ids, true
}

// pendingDoc is the part of a document the relay reads.
type pendingDoc struct {
	ID          string       `bson:"_id"`
	Outbox      []outbox.Doc `bson:"outbox"`
	OutboxSince *time.Time   `bson:"outbox_since"`
}

// prime scans the collection once for every document whose outbox holds events.
func (c *Collection[T]) prime(ctx context.Context) error {
	var docs []pendingDoc
	if err := c.findAll(ctx, bson.D{{Key: "outbox_since", Value: bson.D{{Key: "$ne", Value: nil}}}}, &docs,
		options.Find().SetProjection(bson.D{{Key: "outbox_since", Value: 1}})); err != nil {
		return fmt.Errorf("outbox pending in %s: %w", c.coll.Name(), err)
	}
	p := c.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range docs {
		if _, known := p.since[d.ID]; !known && d.OutboxSince != nil {
			p.since[d.ID] = *d.OutboxSince
		}
	}
	p.primed = true
	return nil
}

// pendingFromIndex is Pending on a store one process owns: the documents the index says are
// due, each read by _id, from the collection's cache where it has one (on such a store the
// cache holds what the process stored).
func (c *Collection[T]) pendingFromIndex(ctx context.Context, before time.Time, limit int) ([]outbox.Batch, error) {
	ids, primed := c.pending.due(before, limit)
	if !primed {
		if err := c.prime(ctx); err != nil {
			return nil, err
		}
		ids, _ = c.pending.due(before, limit)
	}
	out := make([]outbox.Batch, 0, len(ids))
	for _, id := range ids {
		var d pendingDoc
		raw, found, err := c.read(ctx, id, false)
		if err == nil && found {
			err = bson.Unmarshal(raw, &d)
		}
		if err != nil {
			return nil, fmt.Errorf("outbox pending in %s: %w", c.coll.Name(), err)
		}
		if !found || len(d.Outbox) == 0 {
			c.pending.note(id, nil) // gone, or cleared by a write the index did not see
			continue
		}
		out = append(out, outbox.Batch{AggregateID: id, Docs: d.Outbox})
	}
	return out, nil
}
