package outbox

import (
	"sync"
	"time"
)

// publishedSize bounds the ids a Published remembers: far more than the events that wait in
// outboxes between a publish and the aggregate's next write.
const publishedSize = 1 << 16

// Published remembers the events this process has published whose outbox entries may still be
// stored. It lets an aggregate's own next write drop them (Compact), so a busy aggregate is
// cleared by the writes it gets anyway instead of by a separate write that waits behind them,
// and lets the relay clear entries without publishing them again. It is memory only: after a
// restart the relay publishes such entries once more, which the consumers' idempotency absorbs.
type Published struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

// NewPublished returns an empty set.
func NewPublished() *Published {
	return &Published{ids: make(map[string]struct{}), ring: make([]string, publishedSize)}
}

// Add records event ids as published. The oldest are forgotten first.
func (p *Published) Add(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if _, ok := p.ids[id]; ok {
			continue
		}
		if old := p.ring[p.next]; old != "" {
			delete(p.ids, old)
		}
		p.ring[p.next] = id
		p.next = (p.next + 1) % len(p.ring)
		p.ids[id] = struct{}{}
	}
}

// Has reports whether the event id was published by this process.
func (p *Published) Has(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.ids[id]
	return ok
}

// Compact returns an aggregate's outbox without the events already published, with
// outbox_since unset when nothing is left. A repository calls it on the outbox it read, before
// Append, in every write of the aggregate. A nil Published keeps everything.
func (p *Published) Compact(outbox []Doc, since *time.Time) ([]Doc, *time.Time) {
	if p == nil || len(outbox) == 0 {
		return outbox, since
	}
	kept := make([]Doc, 0, len(outbox))
	for _, d := range outbox {
		if !p.Has(d.ID) {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return kept, since
}
