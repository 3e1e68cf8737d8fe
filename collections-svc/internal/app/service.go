// Package app holds collections' use cases, one method of Service each (one file per use
// case): collection cases (create, read, list, pause, resume, close), debt payments, and the
// files attached to a case (upload, list, content). It declares the outbound ports it needs
// besides the repositories (ports.go).
package app

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"

	"rentalplatform/collections-svc/internal/domain"
)

// Caller is who a use case acts for: the gateway-verified account and mode, and the API
// request, which the events a change raises name.
type Caller = identity.Identity

// Deps are the adapters the use cases run on.
type Deps struct {
	Cases    domain.CaseRepository
	Files    domain.FileRepository
	Contents Contents
	Now      func() time.Time
	IDs      *ids.Generator
	// Random fills b with random bytes (case references); nil: crypto/rand.
	Random func(b []byte)
	Log    *slog.Logger
}

// Config is the service's policy.
type Config struct {
	// Partner is the collection partner every case is submitted to.
	Partner domain.Partner
}

// Service runs the use cases.
type Service struct {
	Deps
	cfg Config
	// cleanups are the refused uploads whose content is being dropped in the background.
	cleanups sync.WaitGroup
}

// New returns the Service.
func New(deps Deps, cfg Config) *Service {
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Random == nil {
		deps.Random = func(b []byte) { _, _ = rand.Read(b) } // crypto/rand.Read never fails
	}
	return &Service{Deps: deps, cfg: cfg}
}

// change applies fn to the caller's case and stores it with the events fn's changes raised,
// which name the caller's request. fn may run more than once (the store retries on a
// conflict), so it only changes the case it is given.
func (s *Service) change(ctx context.Context, caller Caller, id string, fn func(*domain.Case) error) (*domain.Case, error) {
	if !validCaseID(id) {
		return nil, domain.CaseNotFound(id)
	}
	return s.Cases.Update(events.CausedBy(ctx, caller), id, caller.Account, caller.Livemode, fn)
}

// validCaseID reports whether id can name a case at all; anything else is answered as not
// found without asking the store.
func validCaseID(id string) bool { return ids.ValidUUIDv7(ids.CollectionCase, id) }
