package app

import (
	"context"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Get returns the caller's endpoint, or a not-found error (domain.ErrNotFound).
func (s *Service) Get(ctx context.Context, caller Caller, id string) (*domain.Endpoint, error) {
	if !validID(id) {
		return nil, domain.EndpointNotFound(id)
	}
	return s.Endpoints.Get(ctx, id, caller.Account, caller.Livemode)
}
