package app

import (
	"context"

	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

// ListEvents returns one page of the caller's events, newest first, filtered.
func (s *Service) ListEvents(ctx context.Context, caller Caller, f domain.EventFilter, p listing.Params) ([]*domain.EventRecord, bool, error) {
	return s.Events.List(ctx, caller.Account, caller.Livemode, f, p)
}
