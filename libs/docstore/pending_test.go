package docstore

import (
	"slices"
	"testing"
	"time"
)

// The index hands out what is due, oldest first, up to the limit, and nothing before it is
// primed (the sweep then scans once).
func TestPendingIndexDue(t *testing.T) {
	p := newPendingIndex()
	base := time.Unix(1_000, 0)
	at := func(s int) *time.Time { t := base.Add(time.Duration(s) * time.Second); return &t }
	p.note("c", at(3))
	p.note("a", at(1))
	p.note("b", at(1))
	p.note("d", at(9))
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
	p.note("a", nil) // written with an empty outbox
	if ids, _ := p.due(*at(9), 10); !slices.Equal(ids, []string{"b", "c", "d"}) {
		t.Fatalf("after a clear: %v", ids)
	}
	p.unprime()
	if _, primed := p.due(*at(9), 10); primed {
		t.Fatal("still primed after unprime")
	}
	var none *pendingIndex // collections without an index note nothing
	none.note("x", at(1))
	none.unprime()
}
