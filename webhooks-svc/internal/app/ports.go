package app

import (
	"context"
	"time"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Scheduler enqueues the attempt task numbered attempt of a delivery, to run at at (now if at
// has passed). Scheduling a task that is already queued is not an error and does not queue it
// twice.
type Scheduler interface {
	Schedule(ctx context.Context, delivery string, attempt int, at time.Time) error
}

// Request is one signed POST of an event to an endpoint.
type Request struct {
	URL string
	// MessageID is the event id: the webhook-id, the same on every attempt.
	MessageID string
	Timestamp time.Time
	Body      []byte
	// Secrets sign the request, one signature each, in this order.
	Secrets []string
}

// Sender makes one delivery attempt and reports what it met; it never returns an error, a
// failure to connect is a Result without a status.
type Sender interface {
	Send(ctx context.Context, r Request) domain.Result
}

// Feed keeps, for each account and mode that someone listens to, the recent events in the
// order they were stored: the event stream (GET /v1/events/stream) that `rental listen` reads
// and resumes from a position.
type Feed interface {
	// Append adds ev to its account and mode's feed when someone has listened to it within
	// the feed's retention; it adds each event once, however often it is called for it.
	Append(ctx context.Context, ev events.Event) error
	// Open starts a listener of the account and mode after position (the newest entry when
	// after is empty) and returns that position, with gap true when entries after it may be
	// missing: older than the retention, trimmed, or lost with Redis's data.
	Open(ctx context.Context, account string, livemode bool, after string) (position string, gap bool, err error)
	// Read returns up to limit entries after position, waiting up to wait for the first, with
	// lost true when the feed's data vanished since the last Open or Read (Redis lost it).
	Read(ctx context.Context, account string, livemode bool, after string, wait time.Duration, limit int) (entries []FeedEntry, lost bool, err error)
}

// FeedEntry is one event in a feed.
type FeedEntry struct {
	// Position is the entry's place in the feed, which a listener resumes after.
	Position string
	Event    string // the event's id
	Type     string
	// Data is the event as the API shows it (GET /v1/events/:id), as JSON.
	Data []byte
}
