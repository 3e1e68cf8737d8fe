package domain

import (
	"context"
	"time"

	"rentalplatform/libs/listing"
)

// Filter narrows a session list; zero fields do not filter.
type Filter struct {
	Status Status
	// ApplicantEmail matches the applicant's email without regard to case.
	ApplicantEmail string
}

// Repository stores sessions. Every method taking an account and mode is scoped to them: a
// session of another account or mode is reported as not found, never returned. The events a
// session raised (Session.Raised) are rendered and stored with it, in the same write, in its
// outbox; the request they name is the one the context names (events.CausedBy), none for
// background work.
type Repository interface {
	// Create stores a new session and returns the session stored: s, or, for a create retried under an Idempotency-Key that
	// already created one, the one stored then (nothing is stored again).
	Create(ctx context.Context, s *Session) (*Session, error)
	// Get returns the session, or SessionNotFound.
	Get(ctx context.Context, id, account string, livemode bool) (*Session, error)
	// Update reads the session, passes it to fn, and stores the result unless fn fails, in
	// which case nothing is stored and fn's error is returned. fn may be called more than once
	// (when a concurrent write wins, the repository reads again and retries), so it must only
	// change the session it is given. It returns the session as stored, SessionNotFound, or
	// domainerr.LockTimeout when retries run out. A session whose fn changed nothing (raised no event)
	// is not written.
	Update(ctx context.Context, id, account string, livemode bool, fn func(*Session) error) (*Session, error)
	// Load returns the session whatever its account and mode, or SessionNotFound: for a request
	// that names no account, the hosted page, which checks the session's own
	// credential instead (Session.HostedPageOpens).
	Load(ctx context.Context, id string) (*Session, error)
	// UpdateAny is Update whatever the session's account: background work (expiry), and the
	// hosted page, whose fn checks the session's client secret first.
	UpdateAny(ctx context.Context, id string, fn func(*Session) error) (*Session, error)
	// List returns one page of the account's sessions in the mode, newest first, and whether
	// more lie beyond it in the direction read.
	List(ctx context.Context, account string, livemode bool, f Filter, p listing.Params) ([]*Session, bool, error)
	// ExpiryDue returns the ids of up to limit sessions, of any account, still created or
	// pending whose expires_at is at or before t, soonest first.
	ExpiryDue(ctx context.Context, t time.Time, limit int) ([]string, error)
}
