package app

import (
	"context"

	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Get returns the caller's endpoint, or a not-found error (domain.ErrNotFound).
func (s *Service) Get(ctx context.Context, caller Caller, id string) (*domain.Endpoint, error) {
	if !validID(id) {
		return nil, domain.EndpointNotFound(id)
	}
	return s.Endpoints.Get(ctx, id, caller.Account, caller.Livemode)
}

// List returns one page of the caller's endpoints, newest first, and whether more lie beyond
// it in the direction read. A cursor is only a position (ids sort by creation time), so it is
// not looked up: a client that deletes the last endpoint of a page can still ask for the next
// one, and another account's id reveals nothing but the caller's own endpoints around that time.
func (s *Service) List(ctx context.Context, caller Caller, p listing.Params) ([]*domain.Endpoint, bool, error) {
	return s.Endpoints.List(ctx, caller.Account, caller.Livemode, p)
}
