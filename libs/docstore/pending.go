package docstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/outbox"
)

// pendingIndex is, on a store one process owns (the embedded one), the documents whose outbox
// holds events not yet known to be published, since when, and the stamp of the write that
// last added entries to them, kept as the process writes them. The relay's sweep (Pending)
// then reads those documents by _id, the only lookup that store serves from an index, instead
// of a query on outbox_since, which it evaluates over every document of the collection: a
// collection of many aggregates (verification sessions) made that scan, every relay interval,
// the store's largest cost. It is primed by one such scan, at the first sweep, for what an
// earlier process left behind; from then on it knows every pending document (a purged one is
// dropped when the sweep finds it gone).
//
// It also keeps the collection's published mark, which spares a write per published event
// (marks.go): published entries are not cleared by a write of their own, they stay in the
// stored document until its next write, and the mark says, across restarts, which of them
// are published.
type pendingIndex struct {
	mu      sync.Mutex
	primed  bool
	pending map[string]pendingEntry
	// written: the documents this process wrote before the index was primed, whose state the
	// index knows better than the scan (their published entries may still be stored).
	written map[string]bool

	marks marks
}

// pendingEntry is a document whose outbox holds events that may not be published yet.
type pendingEntry struct {
	since time.Time // when its outbox became non-empty
	stamp int64     // of the write that last added entries (0: a document stored without stamps)
}

func newPendingIndex(store *mongo.Collection, name string, now func() time.Time) *pendingIndex {
	return &pendingIndex{pending: map[string]pendingEntry{}, written: map[string]bool{}, marks: newMarks(store, name, now)}
}

// note records a document as stored: pending since since, its entries stamped up to stamp, or
// not pending when since is nil.
func (p *pendingIndex) note(id string, since *time.Time, stamp int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.primed {
		p.written[id] = true
	}
	if since == nil {
		delete(p.pending, id)
	} else {
		p.pending[id] = pendingEntry{since: *since, stamp: stamp}
	}
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
	for id, e := range p.pending {
		if !e.since.After(before) {
			out = append(out, entry{id, e.since})
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
	ID          string     `bson:"_id"`
	Deleted     bool       `bson:"deleted"`
	Outbox      Entries    `bson:"outbox"`
	OutboxSince *time.Time `bson:"outbox_since"`
	OutboxStamp int64      `bson:"outbox_stamp"`
}

// prime scans the collection once for every document whose outbox holds events that the
// published mark does not cover.
func (c *Collection[T]) prime(ctx context.Context) error {
	if err := c.pending.loadMarks(ctx); err != nil {
		return err
	}
	var docs []pendingDoc
	if err := c.findAll(ctx, bson.D{{Key: "outbox_since", Value: bson.D{{Key: "$ne", Value: nil}}}}, &docs,
		options.Find().SetProjection(bson.D{{Key: "outbox_since", Value: 1}, {Key: "outbox_stamp", Value: 1}})); err != nil {
		return fmt.Errorf("outbox pending in %s: %w", c.coll.Name(), err)
	}
	p := c.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range docs {
		// Stamps go on from the largest an earlier process issued: once its documents are
		// published, the mark passes them.
		p.marks.last = max(p.marks.last, d.OutboxStamp)
		if _, known := p.pending[d.ID]; known || p.written[d.ID] || d.OutboxSince == nil || p.coversLocked(d.OutboxStamp) {
			continue
		}
		p.pending[d.ID] = pendingEntry{since: *d.OutboxSince, stamp: d.OutboxStamp}
	}
	p.primed, p.written = true, nil
	return nil
}

// pendingFromIndex is Pending on a store one process owns: the documents the index says are
// due, each read by _id, from the collection's cache where it has one (on such a store the
// cache holds what the process stored). It also stores the published mark when it has moved.
func (c *Collection[T]) pendingFromIndex(ctx context.Context, before time.Time, limit int) ([]outbox.Batch, error) {
	ids, primed := c.pending.due(before, limit)
	if !primed {
		if err := c.prime(ctx); err != nil {
			return nil, err
		}
		ids, _ = c.pending.due(before, limit)
	}
	if err := c.pending.saveMark(ctx); err != nil {
		return nil, err
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
			c.pending.note(id, nil, 0) // gone, or cleared by a write the index did not see
			continue
		}
		out = append(out, outbox.Batch{AggregateID: id, Docs: d.Outbox})
	}
	return out, nil
}

// Recent implements outbox.RecentStore: the documents holding events raised at or after since,
// with their outbox, for the relay to publish again when Redis lost them. Only a store one
// process owns keeps published entries (the relay's retention, outbox.Relay.Compact); on the
// others a published entry is cleared at once, and there is nothing to return. Every document
// whose outbox gained an entry since then is stamped since then (a stamp is never below the
// clock), so one query on the stamp finds them: a scan on the embedded store, made once per
// loss of Redis's data.
func (c *Collection[T]) Recent(ctx context.Context, since time.Time) ([]outbox.Batch, error) {
	if c.pending == nil {
		return nil, nil
	}
	var docs []pendingDoc
	if err := c.findAll(ctx, bson.D{{Key: "outbox_stamp", Value: bson.D{{Key: "$gte", Value: since.UnixNano()}}}}, &docs,
		options.Find().SetProjection(bson.D{{Key: "outbox", Value: 1}})); err != nil {
		return nil, fmt.Errorf("outbox entries since %s in %s: %w", since.Format(time.RFC3339), c.coll.Name(), err)
	}
	out := make([]outbox.Batch, 0, len(docs))
	for _, d := range docs {
		if len(d.Outbox) > 0 {
			out = append(out, outbox.Batch{AggregateID: d.ID, Docs: d.Outbox})
		}
	}
	return out, nil
}
