package outbox

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestCompactDropsPublishedEntriesButTheRetainedOnes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	ids := func(docs []Doc) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.ID)
		}
		return out
	}
	old, recent := now.Add(-11*time.Minute).Unix(), now.Add(-10*time.Minute).Unix()
	box := []Doc{{ID: "evt_1", Created: old}, {ID: "evt_2", Created: recent}, {ID: "evt_3", Created: now.Unix()}}
	var many []Doc
	for i := range RetainedPerAggregate + 2 {
		many = append(many, Doc{ID: fmt.Sprintf("evt_m%02d", i), Created: now.Unix()})
	}
	for _, tc := range []struct {
		name            string
		box             []Doc
		published       []string
		covered, retain bool
		want            []string
		wantPending     bool
	}{
		{"nothing published", box, nil, false, false, []string{"evt_1", "evt_2", "evt_3"}, true},
		{"some published", box, []string{"evt_1", "evt_3", "evt_9"}, false, false, []string{"evt_2"}, true},
		{"all published: nothing left", box, []string{"evt_3", "evt_2", "evt_1"}, false, false, nil, false},
		{"covered by the store: nothing left", box, nil, true, false, nil, false},
		{"retained: the published ones of the window stay", box, []string{"evt_1", "evt_2", "evt_3"}, false, true, []string{"evt_2", "evt_3"}, false},
		{"retained beside an unpublished one, in order", box, []string{"evt_1", "evt_2"}, false, true, []string{"evt_2", "evt_3"}, true},
		{"retained when covered", box, nil, true, true, []string{"evt_2", "evt_3"}, false},
		{"retained: the last ones up to the bound", many, ids(many), false, true, ids(many[2:]), false},
		{"empty", nil, nil, false, true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRelay(nil, nil, time.Hour, 0)
			r.now = func() time.Time { return now }
			r.Retain(10*time.Minute, nil)
			r.published.Add(tc.published...)
			got, pending := r.Compact(slices.Clone(tc.box), tc.covered, tc.retain)
			if !slices.Equal(ids(got), tc.want) || pending != tc.wantPending {
				t.Fatalf("Compact = %v, pending %t; want %v, pending %t", ids(got), pending, tc.want, tc.wantPending)
			}
		})
	}
	t.Run("no retention window", func(t *testing.T) {
		r := NewRelay(nil, nil, time.Hour, 0)
		r.published.Add("evt_1", "evt_2", "evt_3")
		if got, _ := r.Compact(box, false, true); got != nil {
			t.Fatalf("Compact = %v; want nothing kept without a window", ids(got))
		}
	})
}

func TestPublishedForgetsTheOldestFirst(t *testing.T) {
	t.Parallel()
	p := NewPublished()
	p.Add("evt_first")
	for i := 0; i < publishedSize; i++ {
		p.Add("evt_" + string(rune('a'+i%26)) + time.Duration(i).String())
	}
	if p.Has("evt_first") {
		t.Fatal("the oldest id was kept past the bound")
	}
	if n := p.ids.Len(); n > publishedSize {
		t.Fatalf("%d ids kept, bound %d", n, publishedSize)
	}
}
