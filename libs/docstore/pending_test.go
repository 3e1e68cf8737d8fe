package docstore

import (
	"slices"
	"testing"
	"time"
)

// The index hands out what is due, oldest first, up to the limit, and nothing before it is
// primed (the sweep then scans once).
func TestPendingIndexDue(t *testing.T) {
	p := newPendingIndex(nil, "c", time.Now)
	base := time.Unix(1_000, 0)
	at := func(s int) *time.Time { t := base.Add(time.Duration(s) * time.Second); return &t }
	p.note("c", at(3), 0)
	p.note("a", at(1), 0)
	p.note("b", at(1), 0)
	p.note("d", at(9), 0)
	if ids, primed := p.due(base.Add(time.Hour), 10); primed || ids != nil {
		t.Fatalf("unprimed index answered %v", ids)
	}
	p.primed = true
	if ids, _ := p.due(*at(3), 10); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("due = %v", ids)
	}
	if ids, _ := p.due(*at(3), 2); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("due with limit 2 = %v", ids)
	}
	p.note("a", nil, 0) // written with an empty outbox
	if ids, _ := p.due(*at(9), 10); !slices.Equal(ids, []string{"b", "c", "d"}) {
		t.Fatalf("after a clear: %v", ids)
	}
	var none *pendingIndex // collections without an index note nothing
	none.note("x", at(1), 0)
}

// The mark stops at the oldest write still pending or in flight, and passes every stamp once
// none is.
func TestMarkStopsAtTheOldestUnpublishedWrite(t *testing.T) {
	p := newPendingIndex(nil, "c", func() time.Time { return time.Unix(0, 100) })
	p.marks.loaded, p.marks.covered = true, 50
	a, _ := p.stamp(t.Context()) // 100: the clock
	b, _ := p.stamp(t.Context()) // 101: after the last
	if a != 100 || b != 101 {
		t.Fatalf("stamps %d, %d", a, b)
	}
	since := time.Unix(1, 0)
	p.note("doc_b", &since, b)
	p.done(b)
	p.mu.Lock()
	if w := p.mark(); w != a {
		t.Fatalf("mark %d with a write stamped %d in flight", w, a)
	}
	p.mu.Unlock()
	p.done(a) // a failed: nothing stored
	p.mu.Lock()
	if w := p.mark(); w != b {
		t.Fatalf("mark %d with doc_b (stamped %d) pending", w, b)
	}
	p.mu.Unlock()
	p.note("doc_b", nil, 0) // published
	p.mu.Lock()
	if w := p.mark(); w != b+1 {
		t.Fatalf("mark %d with nothing pending, want past the last stamp %d", w, b)
	}
	p.mu.Unlock()
	if p.covers(0) || !p.covers(49) || p.covers(50) {
		t.Fatal("covers: a document without a stamp is never covered; one below the mark read is")
	}
}
