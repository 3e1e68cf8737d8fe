package domain

import (
	"context"
	"time"

	"rentalplatform/libs/listing"
)

// AgreementFilter narrows an agreement list; zero fields do not filter.
type AgreementFilter struct {
	Status AgreementStatus
}

// AgreementRepository stores agreements. Methods taking an account and mode are scoped to
// them: another account's or mode's agreement is AgreementNotFound, never returned. The events
// an agreement raised (Raised) are rendered and stored with it, in the same write, in its
// outbox.
type AgreementRepository interface {
	// Create stores a new agreement and returns the agreement stored: a, or, for a create retried under an Idempotency-Key that already created one, the one
	// stored then (nothing is stored again).
	Create(ctx context.Context, a *Agreement) (*Agreement, error)
	// Get returns the caller's agreement, read from the store (never from a cache: a request
	// is only charged against an agreement known to be active).
	Get(ctx context.Context, id, account string, livemode bool) (*Agreement, error)
	// Load is Get for the engine, whatever the owner.
	Load(ctx context.Context, id string) (*Agreement, error)
	// Update reads the caller's agreement, passes it to fn and stores the result unless fn
	// fails (then nothing is stored and fn's error is returned). fn may run more than once, so
	// it only changes the agreement it is given.
	Update(ctx context.Context, id, account string, livemode bool, fn func(*Agreement) error) (*Agreement, error)
	// UpdateAny is Update for the engine, whatever the owner.
	UpdateAny(ctx context.Context, id string, fn func(*Agreement) error) (*Agreement, error)
	List(ctx context.Context, account string, livemode bool, f AgreementFilter, p listing.Params) ([]*Agreement, bool, error)
	// Cascading returns up to limit cancelled agreements whose requests may not all be
	// cancelled yet.
	Cascading(ctx context.Context, limit int) ([]*Agreement, error)
}

// RequestFilter narrows a request list; zero fields do not filter.
type RequestFilter struct {
	Agreement string
	Status    Status
}

// RequestRepository stores payment requests, as AgreementRepository stores agreements.
type RequestRepository interface {
	// Create stores new requests, all in one write, and returns the requests stored: each of
	// rs, or, for a create retried under an Idempotency-Key that already created one, the one
	// stored then (nothing is stored again).
	Create(ctx context.Context, rs []*Request) ([]*Request, error)
	Get(ctx context.Context, id, account string, livemode bool) (*Request, error)
	// Load is Get for the engine, whatever the owner.
	Load(ctx context.Context, id string) (*Request, error)
	// Update is as AgreementRepository's.
	Update(ctx context.Context, id, account string, livemode bool, fn func(*Request) error) (*Request, error)
	// Attempt is the engine's change around a charge: claim (stored before charge runs, so
	// nothing else changes the request meanwhile), charge, with the request as claimed, then
	// record what charge returned. claim failing stores nothing and charge does not run;
	// charge failing leaves the claim stored; record failing returns its error with the claim
	// stored. A store may keep the claim back while charge runs, holding the request against
	// every other writer, and store claim and record together when charge is quick: a crash
	// then stores neither, and the attempt runs again (charge must be idempotent). It returns
	// the request as changed last and what charge returned.
	Attempt(ctx context.Context, id string, claim func(*Request) error,
		charge func(context.Context, *Request) (Charged, error), record func(*Request, Charged) error) (*Request, Charged, error)
	List(ctx context.Context, account string, livemode bool, f RequestFilter, p listing.Params) ([]*Request, bool, error)
	// OpenFor returns the pending and processing requests of an agreement.
	OpenFor(ctx context.Context, agreement string) ([]*Request, error)
	// Overdue returns up to limit open requests whose attempt was due at or before dueBefore
	// and is not claimed, or whose claim was taken at or before claimedBefore (its worker
	// died): attempts whose task may have been lost.
	Overdue(ctx context.Context, dueBefore, claimedBefore time.Time, limit int) ([]*Request, error)
	// Open returns up to limit open requests with ids after the given one, in id order: the
	// reconciler's full pass.
	Open(ctx context.Context, after string, limit int) ([]*Request, error)
}
