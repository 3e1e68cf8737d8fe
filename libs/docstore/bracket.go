package docstore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/events"
	"rentalplatform/libs/stack"
)

// bracketHold is how long, on the embedded store, Bracket holds a document for its work before
// it stores the before-change on its own and lets the document's other writers go on. A
// payment attempt's charge is a write to the simulator's ledger, which under load queues
// behind others: with 25 ms, 3 in 10 attempts outlasted the hold and cost two writes of the
// request (10,000 collected: 13,000 updates); with 100 ms, 10,005. A writer that arrives
// meanwhile (a cancel) waits that long at most, as it would wait for a stored claim.
const bracketHold = 100 * time.Millisecond

// held is the rest of a Bracket, carried by its op: the work, and the change after it.
type held[T any] struct {
	work  func(context.Context, T) error
	after func(*T) error
	// stored reports, once the op is applied, whether before was stored on its own and after
	// is still to apply.
	stored bool
	// done receives work's outcome when before was stored on its own.
	done chan error
}

// Bracket changes a document around work done outside the store, such as a charge that must
// happen at most once: before marks the document (a claim), work runs with the document as
// before left it, after records the outcome from work's result. It returns the document as
// stored last and work's result.
//
//   - before fails: its error is returned, nothing is stored, work does not run.
//   - work fails: before is stored, work's error is returned, after does not run.
//   - after fails: before is stored, after's error is returned.
//
// On MongoDB, before is stored by a write of its own before work runs (other processes may
// change the document meanwhile; what before stores must keep them off, as a claim does), and
// after by a second write. On the embedded store, where the process owns the data, the
// document is held while work runs (this process's other writers of it wait, and every one
// there is), and when work ends within a short hold, one write stores before and after
// together; work that takes longer, or fails, has before stored on its own first, the
// document released, and after stored by a second write, as on MongoDB. A crash while the
// document is held stores nothing of before: work must be safe to do again (a charge with an
// idempotency key).
//
// Like Update's function, before and after may be called more than once and must change only
// the document they are given; on the embedded store before is called once, and after only
// once work has returned. work runs once (on its own goroutine when the document is held).
//
// It is a function rather than a method because work's result is of a type of its own (a
// method cannot add one); each step gets what the one before it returned, so a caller's steps
// share no state.
func Bracket[T, W any](ctx context.Context, c *Collection[T], id string, before func(*T) error,
	work func(context.Context, T) (W, error), after func(*T, W) error) (T, W, error) {
	// result is written by work and read by after, which runs only once work has returned
	// (on the held path, after receiving work's outcome from its goroutine).
	var result W
	doc, err := c.bracket(ctx, id, before,
		func(ctx context.Context, d T) (err error) { result, err = work(ctx, d); return err },
		func(d *T) error { return after(d, result) })
	if err != nil {
		// work may still be running (its before was stored and the write failed): its
		// result is not read.
		var zero W
		return doc, zero, err
	}
	return doc, result, nil
}

func (c *Collection[T]) bracket(ctx context.Context, id string, before func(*T) error, work func(context.Context, T) error, after func(*T) error) (T, error) {
	if c.strategy.multiProcess() {
		doc, err := c.Update(ctx, id, before)
		if err != nil {
			return doc, err
		}
		if err := work(ctx, doc); err != nil {
			return doc, err
		}
		return c.Update(ctx, id, after)
	}
	h := &held[T]{work: work, after: after}
	o := &op[T]{ctx: ctx, fn: before, held: h, lead: make(chan bool, 1)}
	c.enqueue(ctx, id, o)
	if !h.stored || o.err != nil {
		return o.doc, o.err
	}
	// before is stored; the document is free again. after waits for work like any writer.
	if err := <-h.done; err != nil {
		return o.doc, err
	}
	return c.Update(ctx, id, after)
}

// applyHeld applies a Bracket's op (alone in its batch, see enqueue): before, to a copy, then
// work while the document is held, then one write of before and after, or of before alone
// when work fails or outlasts bracketHold.
func (c *Collection[T]) applyHeld(ctx context.Context, id string, o *op[T]) {
	h := o.held
	finish := func(doc T, err error) {
		o.doc, o.err = doc, err
		o.lead <- false
	}
	// before, once, on a copy: work gets it, and the write stores it (the document is held,
	// so the copy is still what is stored, plus before).
	trial, raised, err := c.tryBefore(ctx, id, o.fn)
	if err != nil {
		finish(trial, err)
		return
	}
	stored := trial
	beforeOp := func() *op[T] {
		return &op[T]{ctx: o.ctx, lead: make(chan bool, 1), fn: func(d *T) error {
			*d = stored
			metaOf(d).Raise(raised...)
			return nil
		}}
	}
	done := make(chan error, 1)
	go func() {
		stack.Grow() // a goroutine per held write, whose work runs deep (package stack)
		done <- h.work(ctx, trial)
	}()
	timer := time.NewTimer(bracketHold)
	defer timer.Stop()
	var workErr error
	select {
	case workErr = <-done:
		if workErr == nil {
			finish(c.storeHeld(ctx, id, trial, raised, &op[T]{ctx: o.ctx, fn: h.after}))
			return
		}
	case <-timer.C:
		h.stored, h.done = true, done
	}
	b := beforeOp()
	c.apply(ctx, id, []*op[T]{b})
	if b.err == nil && workErr != nil {
		b.err = workErr
	}
	finish(b.doc, b.err)
}

// storeHeld stores before and after by one write, once work has ended within the hold: after
// is applied to trial (before's result), which is still what is stored plus before, since the
// document was held. This is the general way (apply) minus what it redoes for a batch: it
// decodes the stored copy, encodes the document after each change (to find a batch that
// changed nothing; a claim always changes something) and decodes the stored result for every
// op but the first. In payments-svc an attempt's write decoded its request three
// times and encoded it four times; now once and twice.
//
// A write that does not land, which only another process's write to the document can cause,
// is the collection's Conflict error: the caller runs the Bracket again (its work must be
// safe to do again, as for a crash).
func (c *Collection[T]) storeHeld(ctx context.Context, id string, trial T, raised []events.Event, after *op[T]) (T, error) {
	box, err := c.entries(after.ctx, raised)
	if err != nil {
		return trial, err
	}
	// trial encoded, to go back to when after fails: after may have changed what trial shares
	// with the copy it is given (a slice's elements, a map).
	undo, err := bson.Marshal(&trial)
	if err != nil {
		return trial, fmt.Errorf("encode %s %s: %w", c.coll.Name(), id, err)
	}
	doc := trial
	failed := c.applyOne(&doc, after, id, &box)
	if failed != nil {
		// before alone, as the general way stores it when after fails
		if doc, err = c.decode(undo); err != nil {
			return doc, err
		}
	}
	var applied []byte
	if metaOf(&doc).Deleted { // its removal reports the document as applied
		if applied, err = bson.Marshal(&doc); err != nil {
			return doc, fmt.Errorf("encode %s %s: %w", c.coll.Name(), id, err)
		}
	}
	landed, err := c.write(context.WithoutCancel(ctx), id, &doc, applied, box, []*op[T]{after})
	switch {
	case err != nil:
		return doc, err
	case !landed:
		return doc, c.conflict()
	}
	return after.doc, failed
}

// tryBefore returns the document as before leaves it, without storing it, and the events
// before raised.
func (c *Collection[T]) tryBefore(ctx context.Context, id string, before func(*T) error) (T, []events.Event, error) {
	var zero T
	raw, found, err := c.read(context.WithoutCancel(ctx), id, false)
	if err != nil {
		return zero, nil, err
	}
	if !found {
		return zero, nil, c.notFound(id)
	}
	doc, err := c.decode(raw)
	if err != nil {
		return zero, nil, err
	}
	if metaOf(&doc).Deleted {
		return zero, nil, c.notFound(id)
	}
	if err := before(&doc); err != nil {
		return zero, nil, err
	}
	m := metaOf(&doc)
	raised := m.raised
	m.raised = nil
	return doc, raised, nil
}
