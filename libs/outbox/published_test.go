package outbox

import (
	"slices"
	"testing"
	"time"
)

func TestCompactDropsPublishedEntries(t *testing.T) {
	t.Parallel()
	box := []Doc{{ID: "evt_1"}, {ID: "evt_2"}, {ID: "evt_3"}}
	ids := func(docs []Doc) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		published []string
		want      []string
	}{
		{"nothing published", nil, []string{"evt_1", "evt_2", "evt_3"}},
		{"some published", []string{"evt_1", "evt_3", "evt_9"}, []string{"evt_2"}},
		{"all published: nothing left", []string{"evt_3", "evt_2", "evt_1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPublished()
			p.Add(tc.published...)
			got := p.Compact(slices.Clone(box))
			if !slices.Equal(ids(got), tc.want) {
				t.Fatalf("Compact = %v; want %v", ids(got), tc.want)
			}
		})
	}
	var none *Published
	if got := none.Compact(box); len(got) != 3 {
		t.Fatal("a nil Published must keep the outbox as it is")
	}
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
