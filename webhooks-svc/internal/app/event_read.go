package app

import (
	"context"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

// GetEvent returns the caller's event, or a not-found error (domain.ErrEventNotFound).
func (s *Service) GetEvent(ctx context.Context, caller Caller, id string) (*domain.EventRecord, error) {
	if !ids.Valid(ids.Event, id) {
		return nil, domain.EventNotFound(id)
	}
	return s.Events.Get(ctx, id, caller.Account, caller.Livemode)
}

// ListEvents returns one page of the caller's events, newest first, filtered.
func (s *Service) ListEvents(ctx context.Context, caller Caller, f domain.EventFilter, p listing.Params) ([]*domain.EventRecord, bool, error) {
	return s.Events.List(ctx, caller.Account, caller.Livemode, f, p)
}
