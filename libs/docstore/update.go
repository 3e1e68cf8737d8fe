package docstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/outbox"
)

// op is one change waiting for its document: a caller's function, or a clear of published
// outbox entries.
type op[T any] struct {
	ctx   context.Context // the caller's: the trace context of the events it raises
	fn    func(*T) error  // nil for a clear
	clear map[string]bool // the event ids a clear drops
	held  *held[T]        // a Bracket's work and after (fn is its before), applied alone
	lead  chan bool       // true: apply the queue; false: this op's outcome is set

	doc T
	err error
}

// queue is the ops waiting for one document while another is being applied.
type queue[T any] struct{ ops []*op[T] }

// Update reads the document, passes it to fn and stores the result, on condition that the
// document is still as read; when another writer won, it reads again and calls fn again. So fn
// must change only the document it is given. When fn fails, nothing of it is stored and its
// error is returned; when it changes nothing, nothing is written. fn may raise events
// (Meta.Raise): they are stored in the document's outbox by the same write and handed to the
// relay. fn may set Meta.Deleted. Update returns the document as stored, the collection's
// NotFound error, or its Conflict error when retries run out.
//
// Writers of one document queue behind each other in the process; the functions that queued
// while a write was in flight are applied in turn to one copy and stored by one write, each
// caller learning its own outcome. fn runs on whichever caller's goroutine leads the queue,
// and must not update the same document itself (it would wait for itself).
func (c *Collection[T]) Update(ctx context.Context, id string, fn func(*T) error) (T, error) {
	o := &op[T]{ctx: ctx, fn: fn, lead: make(chan bool, 1)}
	c.enqueue(ctx, id, o)
	return o.doc, o.err
}

// Clear implements outbox.Store: it removes the given events, which are published, from the
// aggregate's outbox, leaving any others, in the aggregate's queue like any write (so a busy
// aggregate's clear is one more change of its next write), and removes a deleted aggregate
// once its outbox is empty. On the embedded store a clear of an aggregate that is not deleted
// writes nothing: the entries stay stored until its next write, covered by the published mark
// (marks.go), and the aggregate stops being pending once none of its entries is unpublished.
func (c *Collection[T]) Clear(ctx context.Context, id string, docs []outbox.Doc) error {
	drop := make(map[string]bool, len(docs))
	for _, d := range docs {
		drop[d.ID] = true
	}
	if c.pending != nil {
		// Cleared in memory: the set of published events is what tells the entries left
		// stored from those still to publish.
		c.published().Add(slices.Collect(maps.Keys(drop))...)
	}
	o := &op[T]{ctx: ctx, clear: drop, lead: make(chan bool, 1)}
	c.enqueue(ctx, id, o)
	return o.err
}

// enqueue adds o to the document's queue and returns once o is applied. The first op of an
// idle document leads: it applies everything queued, one batch at a time, and hands the lead
// to the first op still queued after the batch that held its own, so no caller applies others'
// changes for longer than one write beyond its own.
func (c *Collection[T]) enqueue(ctx context.Context, id string, o *op[T]) {
	c.mu.Lock()
	q, busy := c.queues[id]
	if !busy {
		q = &queue[T]{}
		c.queues[id] = q
	}
	q.ops = append(q.ops, o)
	c.mu.Unlock()
	lead := !busy
	for {
		if lead {
			c.mu.Lock()
			// A Bracket's op is applied alone: the ops before it first, then it.
			n := len(q.ops)
			if i := slices.IndexFunc(q.ops, func(o *op[T]) bool { return o.held != nil }); i >= 0 {
				n = max(i, 1)
			}
			batch := q.ops[:n:n]
			q.ops = slices.Clone(q.ops[n:])
			c.mu.Unlock()
			if batch[0].held != nil {
				c.applyHeld(ctx, id, batch[0])
			} else {
				c.apply(ctx, id, batch)
			}
			c.mu.Lock()
			if len(q.ops) == 0 {
				delete(c.queues, id)
			} else {
				q.ops[0].lead <- true
			}
			c.mu.Unlock()
		}
		if lead = <-o.lead; !lead {
			return
		}
	}
}

// apply stores batch's changes to one document, retrying on conflict, and sets every op's
// outcome. The write runs without the leader's cancellation: other callers wait on it.
func (c *Collection[T]) apply(ctx context.Context, id string, batch []*op[T]) {
	ctx = context.WithoutCancel(ctx)
	var err error
	for attempt := range maxUpdateAttempts {
		var landed bool
		if landed, err = c.attempt(ctx, id, batch, attempt > 0); err != nil || landed {
			break
		}
		err = c.conflict()
		_ = pauseAfterConflict(ctx, attempt) // ctx cannot end
	}
	for _, o := range batch {
		if err != nil && o.err == nil {
			var zero T
			o.doc, o.err = zero, err
		}
		o.lead <- false
	}
}

// attempt reads the document (from the cache unless fresh), applies batch and writes the
// result on condition of the version read. landed is false when another writer won.
func (c *Collection[T]) attempt(ctx context.Context, id string, batch []*op[T], fresh bool) (landed bool, err error) {
	raw, found, err := c.read(ctx, id, fresh)
	if err != nil {
		return false, err
	}
	if !found {
		c.missing(id, batch)
		return true, nil
	}
	if c.pending != nil && !slices.ContainsFunc(batch, func(o *op[T]) bool { return o.fn != nil }) {
		if cleared, err := c.clearInMemory(id, raw, batch); cleared || err != nil {
			return err == nil, err
		}
	}
	doc, base, last, raised, err := c.applyBatch(id, raw, batch)
	if err != nil {
		return false, err
	}
	if !fresh && c.cache != nil && slices.ContainsFunc(batch, func(o *op[T]) bool { return o.err != nil }) {
		// A function refused the copy from the cache, which may be stale (another process's
		// write): only the stored document may refuse a change, so read it and apply again.
		return false, nil
	}
	if len(raised) == 0 && bytes.Equal(last, base) {
		c.results(batch, doc, last)
		return true, nil
	}
	return c.write(ctx, id, &doc, last, raised, batch)
}

// missing sets the outcome of a batch whose document does not exist: its changes fail with the
// collection's NotFound error, its clears have nothing left to do.
func (c *Collection[T]) missing(id string, batch []*op[T]) {
	for _, o := range batch {
		var zero T
		o.doc, o.err = zero, nil
		if o.fn != nil {
			o.err = c.notFound(id)
		}
	}
	c.pending.note(id, nil, 0)
}

// applyBatch applies each op of batch to the result of the ones before, and returns the
// document, its encoding as read (base) and after the last op that succeeded, and the events
// the ops raised. An op that fails is undone by going back to the encoding after the last one
// that succeeded, and keeps its error.
func (c *Collection[T]) applyBatch(id string, raw bson.Raw, batch []*op[T]) (doc T, base, last []byte, raised []outbox.Doc, err error) {
	if doc, err = c.decode(raw); err != nil {
		return doc, nil, nil, nil, err
	}
	if base, err = bson.Marshal(&doc); err != nil {
		return doc, nil, nil, nil, fmt.Errorf("encode %s %s: %w", c.coll.Name(), id, err)
	}
	last = base
	for _, o := range batch {
		var zero T
		o.doc, o.err = zero, nil
		if err := c.applyOne(&doc, o, id, &raised); err != nil {
			o.err = err
			if doc, err = c.decode(last); err != nil {
				return doc, nil, nil, nil, err
			}
			continue
		}
		if last, err = bson.Marshal(&doc); err != nil {
			return doc, nil, nil, nil, fmt.Errorf("encode %s %s: %w", c.coll.Name(), id, err)
		}
	}
	return doc, base, last, raised, nil
}

// write stores the document a batch changed (encoded as applied), with the events it raised
// added to its outbox, on condition of the version read; a deleted document whose outbox is
// empty is removed instead. It sets the batch's outcomes and hands the events to the relay
// once stored.
func (c *Collection[T]) write(ctx context.Context, id string, doc *T, applied []byte, raised []outbox.Doc, batch []*op[T]) (landed bool, err error) {
	m := metaOf(doc)
	release, err := c.fillOutbox(ctx, m, raised)
	if err != nil {
		return false, err
	}
	defer release()
	version := m.Version
	if m.Deleted && len(m.Outbox) == 0 {
		if landed, err = c.w.remove(ctx, id, version); err != nil || !landed {
			return false, wrap(err, "remove", c.coll.Name(), id)
		}
		c.forget(id)
		c.index.remove(id)
		c.pending.note(id, nil, 0)
		c.results(batch, *doc, applied)
		c.stored(applied)
		return true, nil
	}
	m.Version = version + 1
	final, err := bson.Marshal(doc)
	if err != nil {
		return false, fmt.Errorf("encode %s %s: %w", c.coll.Name(), id, err)
	}
	if landed, err = c.w.replace(ctx, id, version, final); err != nil || !landed {
		if err != nil {
			c.unknownOutcome(id, m)
		}
		return false, wrap(err, "replace", c.coll.Name(), id)
	}
	c.remember(id, final)
	c.index.put(final)
	c.pending.note(id, m.OutboxSince, m.OutboxStamp)
	c.results(batch, *doc, final)
	c.stored(final)
	c.dispatch(ctx, id, raised)
	return true, nil
}

// unknownOutcome is what a write that failed without an answer leaves: it may have landed (the
// connection was cut after the command was sent), events included. The cached copy is dropped,
// and the document stays pending under the write's stamp, so the published mark stays below it
// (marks.go) and the relay reads it back: it publishes the events if the write landed and
// forgets the document if it did not. Without this the mark would pass the stamp once the write
// is done, and the document's next write would drop the unpublished events as published.
func (c *Collection[T]) unknownOutcome(id string, m *Meta) {
	c.forget(id)
	c.index.unknown(id)
	if m.OutboxStamp != 0 {
		c.pending.note(id, m.OutboxSince, m.OutboxStamp)
	}
}

// fillOutbox sets the document's outbox to its entries not yet published and the raised ones,
// with the time its oldest entry waits since and, when it raised any, a stamp of the pending
// set's, which release gives back once the write is done.
func (c *Collection[T]) fillOutbox(ctx context.Context, m *Meta, raised []outbox.Doc) (release func(), err error) {
	box, pending := c.compact(m)
	if !pending {
		m.OutboxSince = nil
	}
	if len(box) == 0 {
		m.OutboxStamp = 0
	}
	release = func() {}
	if len(raised) > 0 {
		if !pending {
			m.OutboxSince = TimePtr(c.opts.Now())
		}
		if m.OutboxStamp, err = c.pending.stamp(ctx); err != nil {
			return nil, err
		}
		stamp := m.OutboxStamp
		release = func() { c.pending.done(stamp) }
	}
	m.Outbox = append(box, raised...)
	return release, nil
}

// compact returns the document's outbox without the entries known to be published (those
// this process's relay published, and all of them when the published mark covers the
// document: an earlier process's write, see marks.go), and whether an entry is left to
// publish. On a store one process owns, where published entries stay stored anyway, the
// relay's retention keeps the recent ones of a document not deleted, to publish again if
// Redis loses them (outbox.Relay.Retain).
func (c *Collection[T]) compact(m *Meta) ([]outbox.Doc, bool) {
	return c.relay.Compact(m.Outbox, c.pending.covers(m.OutboxStamp), c.pending != nil && !m.Deleted)
}

// clearInMemory applies a batch of clears (published entries) to a document on a store one
// process owns, without writing it: the entries stay stored until the document's next write,
// which drops them (compact), and the document stops being pending once every entry it holds
// is published. A deleted document is left to a write, which removes it once its outbox is
// empty: cleared reports false then.
func (c *Collection[T]) clearInMemory(id string, raw bson.Raw, batch []*op[T]) (cleared bool, err error) {
	// Only the fields needed, looked up in place: decoding every entry's object costs more
	// than the rest of the clear.
	if deleted, _ := raw.Lookup("deleted").BooleanOK(); deleted {
		return false, nil
	}
	for _, o := range batch {
		o.doc, o.err = *new(T), nil
	}
	stamp, _ := raw.Lookup("outbox_stamp").AsInt64OK()
	if c.pending.covers(stamp) {
		c.pending.note(id, nil, 0)
		return true, nil
	}
	entries, err := entryIDs(raw.Lookup("outbox"))
	if err != nil {
		return false, fmt.Errorf("decode the outbox of %s %s: %w", c.coll.Name(), id, err)
	}
	published := c.published()
	for _, eid := range entries {
		if !published.Has(eid) && !slices.ContainsFunc(batch, func(o *op[T]) bool { return o.clear[eid] }) {
			return true, nil // still pending, for the entries left
		}
	}
	c.pending.note(id, nil, 0)
	return true, nil
}

// published is what the relay has published (nil without a relay: nothing).
func (c *Collection[T]) published() *outbox.Published {
	if c.relay == nil {
		return nil
	}
	return c.relay.Published()
}

// applyOne applies one op to doc and adds the events it raised to raised. The store's own
// fields are restored after a caller's function, which may have replaced the whole document;
// only Deleted and the events raised are taken from it.
func (c *Collection[T]) applyOne(doc *T, o *op[T], id string, raised *[]outbox.Doc) error {
	m := metaOf(doc)
	if o.fn == nil {
		m.Outbox = dropEntries(m.Outbox, o.clear)
		return nil
	}
	if m.Deleted {
		return c.notFound(id)
	}
	kept := *m
	if err := o.fn(doc); err != nil {
		return err
	}
	m = metaOf(doc)
	evs, deleted := m.raised, m.Deleted
	*m = kept
	m.Deleted = deleted
	box, err := c.entries(o.ctx, evs)
	if err != nil {
		return err
	}
	*raised = append(*raised, box...)
	return nil
}

// results gives every op that succeeded the document as stored: the first the one in hand,
// the others their own copy.
func (c *Collection[T]) results(batch []*op[T], doc T, raw bson.Raw) {
	first := true
	for _, o := range batch {
		if o.err != nil || o.fn == nil {
			continue
		}
		if first {
			o.doc, first = doc, false
			continue
		}
		if o.doc, o.err = c.decode(raw); o.err != nil {
			continue
		}
	}
}

// dropEntries returns box without the entries whose id is in drop.
func dropEntries(box []outbox.Doc, drop map[string]bool) []outbox.Doc {
	kept := box[:0:0]
	for _, d := range box {
		if !drop[d.ID] {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// wrap adds context to a write's error; nil stays nil.
func wrap(err error, what, coll, id string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s %s: %w", what, coll, id, err)
}
