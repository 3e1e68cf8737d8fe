package outbox

import "rentalplatform/libs/fifo"

// publishedSize bounds the ids a Published remembers: far more than the events that wait in
// outboxes between a publish and the aggregate's next write.
const publishedSize = 1 << 16

// Published remembers the events this process has published whose outbox entries may still be
// stored. It lets an aggregate's own next write drop them (Relay.Compact), so a busy aggregate is
// cleared by the writes it gets anyway instead of by a separate write that waits behind them,
// and lets the relay clear entries without publishing them again. It is memory only: after a
// restart the relay publishes such entries once more, which the consumers' idempotency absorbs.
type Published struct {
	ids *fifo.Map[string, struct{}]
}

// NewPublished returns an empty set.
func NewPublished() *Published {
	return &Published{ids: fifo.New[string, struct{}](publishedSize)}
}

// Add records event ids as published. The oldest are forgotten first.
func (p *Published) Add(ids ...string) {
	for _, id := range ids {
		p.ids.Put(id, struct{}{})
	}
}

// Has reports whether the event id was published by this process.
func (p *Published) Has(id string) bool {
	_, ok := p.ids.Get(id)
	return ok
}
