package app

import (
	"context"
	"time"

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
