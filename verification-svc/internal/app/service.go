// Package app holds the verification use cases, one method of Service each (one file per use
// case): the sessions API, the test helper that advances a session, the applicant's hosted page
// (opened and submitted with the session's client secret), reports, and expiry (the task at
// expires_at and the sweep that catches a lost task). It also declares the outbound
// ports the use cases need besides the repository (ports.go).
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"

	"rentalplatform/verification-svc/internal/domain"
)

// Caller is who a use case acts for: the gateway-verified account and mode, and the API
// request, which the events a change raises name.
type Caller = identity.Identity

// Deps are the adapters the use cases run on.
type Deps struct {
	Sessions  domain.Repository
	Scheduler Scheduler
	// Provider runs live-mode verifications; nil while none is configured (live sessions then
	// stay created until they expire or are canceled).
	Provider Provider
	Now      func() time.Time
	IDs      *ids.Generator
	Log      *slog.Logger
}

// Config is the service's policy.
type Config struct {
	// TTL is a new session's lifetime (expires_at - created).
	TTL time.Duration
	// AllowPrivate lifts the guard against webhook URLs on internal addresses.
	AllowPrivate bool
}

// Service runs the use cases.
type Service struct {
	Deps
	cfg Config
}

// New returns the Service.
func New(deps Deps, cfg Config) *Service {
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Service{Deps: deps, cfg: cfg}
}

// validID reports whether id can name a session at all; anything else is answered as not
// found without asking the store.
func validID(id string) bool { return ids.Valid(ids.VerificationSession, id) }

// errUnchanged is returned by an update function that found nothing to do, so nothing is
// written.
var errUnchanged = errors.New("unchanged")

// change applies fn to the caller's session and stores it with the events its transitions
// raised, which name the caller's request. fn may run more than once (the store retries on a
// conflict), so it only changes the session it is given.
func (s *Service) change(ctx context.Context, caller Caller, id string, fn func(*domain.Session) error) (*domain.Session, error) {
	if !validID(id) {
		return nil, domain.SessionNotFound(id)
	}
	return s.Sessions.Update(events.CausedBy(ctx, caller), id, caller.Account, caller.Livemode, fn)
}
