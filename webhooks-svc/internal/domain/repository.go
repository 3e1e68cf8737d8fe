package domain

import (
	"context"

	"rentalplatform/libs/listing"
)

// Repository stores endpoints. Every method is scoped to one account and mode: an endpoint of
// another account or mode is reported as ErrNotFound, never returned.
type Repository interface {
	// Create stores a new endpoint.
	Create(ctx context.Context, e *Endpoint) error
	// Get returns the endpoint, or ErrNotFound.
	Get(ctx context.Context, id, account string, livemode bool) (*Endpoint, error)
	// Update reads the endpoint, passes it to fn, and stores the result unless fn fails, in
	// which case nothing is stored and fn's error is returned. fn may be called more than once
	// (when a concurrent write wins, the repository reads again and retries), so it must
	// only change the endpoint it is given. It returns the endpoint as stored, ErrNotFound,
	// or ErrConflict when retries run out.
	Update(ctx context.Context, id, account string, livemode bool, fn func(*Endpoint) error) (*Endpoint, error)
	// Delete removes the endpoint, or returns ErrNotFound.
	Delete(ctx context.Context, id, account string, livemode bool) error
	// List returns one page, newest first, and whether more endpoints lie beyond it in the
	// direction read (see listing.Params).
	List(ctx context.Context, account string, livemode bool, p listing.Params) ([]*Endpoint, bool, error)
}
