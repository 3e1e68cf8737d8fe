package app

import (
	"context"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Update applies changes to the caller's endpoint. Invalid changes are refused before the
// endpoint is read, so bad input is a 400 whether or not the endpoint exists, and changes
// nothing.
func (s *Service) Update(ctx context.Context, caller Caller, id string, changes domain.Changes) (*domain.Endpoint, error) {
	if err := changes.Validate(); err != nil {
		return nil, err
	}
	if !validID(id) {
		return nil, domain.ErrNotFound
	}
	return s.repo.Update(ctx, id, caller.Account, caller.Livemode, func(e *domain.Endpoint) error {
		return e.Update(changes)
	})
}
