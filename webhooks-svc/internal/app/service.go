// Package app holds the webhooks use cases, one method of Service each: the webhook endpoint
// API, the event store and its API, the fan-out of published events into deliveries, the
// delivery attempts and their retries, and retention. It also declares the outbound ports the
// use cases need besides the repositories (ports.go).
package app

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Caller is who a use case acts for: the gateway-verified account and mode, and the API
// request, which the events a change raises name. Every use case sees and changes only the
// caller's objects.
type Caller = identity.Identity

// Deps are the adapters the use cases run on.
type Deps struct {
	Endpoints  domain.Repository
	Events     domain.EventRepository
	Deliveries domain.DeliveryRepository
	Scheduler  Scheduler
	Sender     Sender
	// Feed keeps the recent events for listeners (GET /v1/events/stream); nil serves no
	// stream.
	Feed Feed
	Now  func() time.Time // time.Now when nil
	IDs  *ids.Generator
	Log  *slog.Logger

	// Portals stores webhook portal sessions (portal*.go); nil serves no portal.
	Portals domain.PortalSessionRepository
}

// Config is the delivery policy.
type Config struct {
	// Schedule is the delays between a failed attempt and the next.
	Schedule domain.Schedule
	// AutoDisableAfter is how long every delivery to an endpoint may fail before the endpoint
	// is disabled.
	AutoDisableAfter time.Duration
	// Retention is how long events (and their deliveries) are kept.
	Retention time.Duration
	// AllowPrivate lifts the guard against endpoint URLs on internal addresses.
	AllowPrivate bool
	// InlineWait, when positive, has the fan-out make each new delivery's first attempt itself
	// and wait this long for the answers before it stores the deliveries (fanout.go); zero
	// queues every attempt as a task.
	InlineWait time.Duration
	// InlineConcurrency bounds the first attempts made by fan-outs at once; beyond it they
	// are queued as tasks.
	InlineConcurrency int
}

// Service runs the use cases.
type Service struct {
	Deps
	cfg Config
	// secret makes a new signing secret.
	secret func() string
	// rnd returns a random number in [0, 1), for jitter.
	rnd func() float64
	// inline counts the first attempts in flight from fan-outs; nil when InlineWait is 0.
	inline *inflight
}

// New returns the Service.
func New(deps Deps, cfg Config) *Service {
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	var inline *inflight
	if cfg.InlineWait > 0 {
		inline = newInflight(cfg.InlineConcurrency)
	}
	return &Service{
		inline: inline,
		Deps:   deps,
		cfg:    cfg,
		// Standard Webhooks secrets: whsec_ + base64 of the key; 32 bytes is an HMAC-SHA256
		// key of full strength.
		secret: func() string { return ids.StdSecret("whsec_", 32) },
		rnd:    rand.Float64,
	}
}

// validID reports whether id can name an endpoint at all; anything else is answered as not
// found without asking the store.
func validID(id string) bool { return ids.Valid(ids.WebhookEndpoint, id) }

// errUnchanged is returned by an update function that found nothing to change, so nothing is
// written.
var errUnchanged = errors.New("unchanged")

// ignoreUnchanged turns errUnchanged into success.
func ignoreUnchanged(err error) error {
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}
