package docstore

import (
	"time"

	"rentalplatform/libs/events"
)

// Meta is the part of a stored document the store manages. Every document type embeds it
// inline:
//
//	type document struct {
//		docstore.Meta `bson:",inline"`
//		Account string `bson:"account"`
//		...
//	}
//
// An adapter sets ID before Insert, sets Deleted to remove an aggregate and calls Raise for
// the events a change raised; the store keeps Version and the outbox.
type Meta struct {
	// ID is the document's _id.
	ID string `bson:"_id"`
	// Version counts the writes of the document, for conditional replaces. Documents written
	// before the store versioned them have none (0).
	Version int64 `bson:"version"`
	// Deleted removes the aggregate: it is gone for every read at once, and its document is
	// removed as soon as its outbox is empty (at once when it raised no event, else once the
	// event that says so is published).
	Deleted bool `bson:"deleted,omitempty"`
	// Outbox holds the events the aggregate raised that are not yet known to be published, and
	// OutboxSince when the oldest of them was written (the relay's scan reads it). On the
	// embedded store it may also hold published ones until the aggregate's next write, and
	// OutboxStamp orders the write that last added entries against the collection's published
	// mark (marks.go).
	Outbox      Entries    `bson:"outbox,omitempty"`
	OutboxSince *time.Time `bson:"outbox_since,omitempty"`
	OutboxStamp int64      `bson:"outbox_stamp,omitempty"`
	// IdempotencyKey is the Idempotency-Key of the request that created the aggregate, in a
	// collection of IdempotentCreates ("<key>#<i>" for the i-th of a bulk create); none
	// otherwise. The owner's unique index on it makes a retried create store nothing
	// (idempotent.go). Stored as create_key: a document may hold a field idempotency_key of
	// its own (webhooks-svc's events do).
	IdempotencyKey string `bson:"create_key,omitempty"`

	raised []events.Event // by the write in progress; not stored (unexported)
}

// Raise adds events to the outbox in the write in progress (Insert, or the function given to
// Update).
func (m *Meta) Raise(evs ...events.Event) { m.raised = append(m.raised, evs...) }

func (m *Meta) meta() *Meta { return m }

// document is what every stored type is: a struct with Meta embedded.
type document interface{ meta() *Meta }

// TimePtr returns nil for the zero time, so "none" is stored as null (or omitted), and the
// time in UTC otherwise.
func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// TimeOf returns the time p points at, in UTC, or the zero time for nil.
func TimeOf(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}
