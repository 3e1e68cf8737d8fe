// Package app holds payments' use cases, one method of Service each: the payment agreement and
// payment request API, and the collection engine (attempts, retries, the reconciler that
// restores lost schedules, the cascade of an agreement's cancellation). It declares the
// outbound ports it needs besides the repositories (ports.go).
//
// The aggregates raise their events (domain); the repositories render and store them with
// the change. A use case acting for a caller names the caller's request as the events' cause
// (events.CausedBy on the context of its write); the engine's work (attempts, the hard
// declines they record on agreements, the reconciler) names none, so its events carry
// request null.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// Caller is who a use case acts for: the gateway-verified account and mode, and the API
// request, which the events a change raises name (events.CausedBy).
type Caller = identity.Identity

// Deps are the adapters the use cases run on.
type Deps struct {
	Agreements domain.AgreementRepository
	Requests   domain.RequestRepository
	// Test charges test-mode agreements; Live charges live ones, nil until a real processor is
	// configured (live agreements are refused meanwhile).
	Test, Live Processor
	Scheduler  Scheduler
	// Outcomes is told what each attempt came to; nil: nothing is.
	Outcomes Outcomes
	Now      func() time.Time
	IDs      *ids.Generator
	Log      *slog.Logger
	// Detach returns the context of work that outlives the request of ctx (a first attempt run
	// inline): its trace and nothing else of it (telemetry.Detached). Nil: a context of its own.
	Detach func(ctx context.Context) context.Context
	// StartSpan starts the span of such work, name, a child of ctx's span, with attrs as key,
	// value pairs, and returns what ends it with its outcome (telemetry.SpanStarter). Nil: none.
	StartSpan func(ctx context.Context, name string, attrs ...string) (context.Context, func(err error))
}

// Config is the engine's policy.
type Config struct {
	// ClaimTTL is how long an attempt may hold its claim: after it, the worker is taken for
	// dead and the attempt may run again. It must exceed the time an attempt takes to charge
	// every method.
	ClaimTTL time.Duration
	// CancelWait is how long a cancel waits for an attempt that is charging the request before
	// it answers 409 attempt_in_progress.
	CancelWait time.Duration
	// AdvanceWait is how long the test helper waits for the attempt it started.
	AdvanceWait time.Duration
	// ReconcileGrace is how late an attempt may be before the reconciler takes its task for
	// lost and queues it again.
	ReconcileGrace time.Duration
	// InlineConcurrency is how many runners of this process run first attempts handed to them
	// by the creates, from a backlog of InlineBacklog (request_inline.go, StartInline); 0
	// queues every first attempt as a task.
	InlineConcurrency, InlineBacklog int
	// AttemptTimeout bounds an attempt run inline (a queued one has its task's timeout); 0:
	// unbounded.
	AttemptTimeout time.Duration
}

// Service runs the use cases.
type Service struct {
	Deps
	cfg Config
	// fullPass: the queue lost its data and not every open request is queued again yet.
	fullPass atomic.Bool
	// inline runs first attempts in this process once StartInline is called; nil: every one is
	// queued.
	inline atomic.Pointer[inlineRunners]
}

// New returns the Service.
func New(deps Deps, cfg Config) *Service {
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Outcomes == nil {
		deps.Outcomes = noOutcomes{}
	}
	if deps.Detach == nil {
		deps.Detach = func(context.Context) context.Context { return context.Background() }
	}
	if deps.StartSpan == nil {
		deps.StartSpan = func(ctx context.Context, _ string, _ ...string) (context.Context, func(error)) {
			return ctx, func(error) {}
		}
	}
	return &Service{Deps: deps, cfg: cfg}
}

// poll calls try until it reports done, fails, or wait has passed (real time, whatever the
// clock of the use cases says), pausing a little longer each time; it reports whether try
// finished.
func poll(ctx context.Context, wait time.Duration, try func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		done, err := try()
		if done || err != nil {
			return done, err
		}
		if time.Now().Add(pause).After(deadline) {
			return false, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// processor returns the processor of a mode, or nil.
func (s *Service) processor(livemode bool) Processor {
	if livemode {
		return s.Live
	}
	return s.Test
}

// errTestHelperLive answers a test helper called with a live key: there is no such route in
// live mode.
var errTestHelperLive = domainerr.New(domainerr.NotFound, "route_missing", "",
	"Test helpers exist in test mode only: call them with a test key (sk_test_…).")

// errProcessorNotConfigured refuses live agreements until a processor adapter is configured.
var errProcessorNotConfigured = domainerr.New(domainerr.Invalid, domain.CodeProcessorNotConfigured, "",
	"Live-mode payment agreements need a payment processor, and none is configured on this platform. Use a test key (sk_test_…) to try the API with test tokens.")

// newToken returns a random claim token.
func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
