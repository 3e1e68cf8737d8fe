package docstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The published mark, on a store one process owns (the embedded one).
//
// There a clear of published events is a rewrite of the whole document, as costly as the write
// that raised them, and an aggregate that never changes again (a payment request once
// succeeded) would need one for its last event alone. So published entries are not cleared by
// a write of their own: they stay in the stored document, the process forgets the document as
// pending, and the document's next write, if any, drops them. What must survive a restart is
// which stored entries are published, so that the next process does not publish them all
// again. That is the mark:
//
//   - every write that adds entries to an outbox stamps the document (Meta.OutboxStamp) with a
//     number larger than any before it in the collection (nanoseconds of the clock, kept
//     increasing, and never below the mark an earlier process stored);
//   - the mark is a stamp such that every document stamped below it holds only published
//     entries: the smallest stamp of a document still pending (the index) or of a write in
//     flight, or past the last stamp when there is none. The relay's sweep stores it (one
//     small document per collection in markCollection) when it has moved, every relay
//     interval at most;
//   - a process reads the mark before its first stamp: a document stamped below it is taken
//     as published by its first sweep (not pending) and by its next write (compacted).
//
// A crash loses at most the mark's last move: the entries published since are published once
// more by the next process, which the consumers absorb (they are idempotent on the event id).
// Documents stored before stamps existed (no outbox_stamp) are never covered by a mark.

// markCollection holds one mark per collection, {_id: <collection>, published_below: <stamp>}.
const markCollection = "docstore_outbox_marks"

// marks is the state of a collection's mark. Its fields are guarded by the index's mutex.
type marks struct {
	store *mongo.Collection
	name  string
	now   func() time.Time

	loadMu  sync.Mutex // serialises load's read
	loaded  bool
	covered int64         // stamps below it are published: the mark read at load, or stored since
	saved   int64         // the mark as last stored
	last    int64         // the last stamp issued
	writing map[int64]int // stamps issued to writes not yet noted in the index
}

func newMarks(store *mongo.Collection, name string, now func() time.Time) marks {
	return marks{store: store, name: name, now: now, writing: map[int64]int{}}
}

// markDoc is the stored mark.
type markDoc struct {
	ID             string `bson:"_id"`
	PublishedBelow int64  `bson:"published_below"`
}

// stamp issues the stamp of a write that adds outbox entries (0 without an index). The caller
// notes the document in the index once stored, then calls done.
func (p *pendingIndex) stamp(ctx context.Context) (int64, error) {
	if p == nil {
		return 0, nil
	}
	p.mu.Lock()
	loaded := p.marks.loaded
	p.mu.Unlock()
	if !loaded {
		if err := p.loadMarks(ctx); err != nil {
			return 0, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := max(p.marks.now().UnixNano(), p.marks.last+1, p.marks.covered)
	p.marks.last = s
	p.marks.writing[s]++
	return s, nil
}

// loadMarks reads, once, the mark an earlier process stored.
func (p *pendingIndex) loadMarks(ctx context.Context) error {
	m := &p.marks
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	p.mu.Lock()
	loaded := m.loaded
	p.mu.Unlock()
	if loaded {
		return nil
	}
	var d markDoc
	err := m.store.FindOne(ctx, byID(m.name)).Decode(&d)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("read the outbox mark of %s: %w", m.name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m.loaded = true
	m.covered, m.saved = max(m.covered, d.PublishedBelow), max(m.saved, d.PublishedBelow)
	return nil
}

// done ends the write stamp was issued to (stored and noted, or failed).
func (p *pendingIndex) done(stamp int64) {
	if p == nil || stamp == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marks.writing[stamp]--; p.marks.writing[stamp] <= 0 {
		delete(p.marks.writing, stamp)
	}
}

// covers reports whether a document stamped stamp holds only published entries by the mark.
func (p *pendingIndex) covers(stamp int64) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.coversLocked(stamp)
}

func (p *pendingIndex) coversLocked(stamp int64) bool {
	return stamp != 0 && stamp < p.marks.covered
}

// mark is the current mark (p.mu held): the smallest stamp still pending or being written, or
// the next stamp.
func (p *pendingIndex) mark() int64 {
	w := p.marks.last + 1
	for s := range p.marks.writing {
		w = min(w, s)
	}
	for _, e := range p.pending {
		if e.stamp != 0 {
			w = min(w, e.stamp)
		}
	}
	return w
}

// saveMark stores the mark when it has moved since it was last stored. Only a primed index
// knows every pending document, earlier processes' included.
func (p *pendingIndex) saveMark(ctx context.Context) error {
	p.mu.Lock()
	if !p.primed || !p.marks.loaded {
		p.mu.Unlock()
		return nil
	}
	w := p.mark()
	moved := w > p.marks.saved
	p.mu.Unlock()
	if !moved {
		return nil
	}
	if _, err := p.marks.store.ReplaceOne(ctx, byID(p.marks.name), markDoc{ID: p.marks.name, PublishedBelow: w},
		options.Replace().SetUpsert(true)); err != nil {
		return fmt.Errorf("store the outbox mark of %s: %w", p.marks.name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marks.saved = max(p.marks.saved, w)
	p.marks.covered = max(p.marks.covered, w)
	return nil
}
