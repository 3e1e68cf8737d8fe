package app

import (
	"context"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Delete removes the caller's endpoint for good; its id is not reused.
func (s *Service) Delete(ctx context.Context, caller Caller, id string) error {
	if !validID(id) {
		return domain.ErrNotFound
	}
	return s.repo.Delete(ctx, id, caller.Account, caller.Livemode)
}
