package app

import (
	"context"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Update applies changes to the caller's endpoint and stores the webhook_endpoint.updated event
// the endpoint raises (with the previous values of the fields that changed) with it; a change
// that changes nothing visible raises no event. Invalid changes are refused before the endpoint is read, so bad
// input is a 400 whether or not the endpoint exists, and changes nothing. Enabling a disabled
// endpoint schedules its pending deliveries at once.
func (s *Service) Update(ctx context.Context, caller Caller, id string, changes domain.Changes) (*domain.Endpoint, error) {
	changes.CheckHost = s.checkHost()
	if err := changes.Validate(); err != nil {
		return nil, err
	}
	if !validID(id) {
		return nil, domain.EndpointNotFound(id)
	}
	var reenabled bool
	e, err := s.Endpoints.Update(events.CausedBy(ctx, caller), id, caller.Account, caller.Livemode, func(e *domain.Endpoint) error {
		wasDisabled := e.Status() == domain.StatusDisabled
		if err := e.Update(changes); err != nil {
			return err
		}
		reenabled = wasDisabled && e.Status() == domain.StatusEnabled
		return nil
	})
	if err != nil {
		return nil, err
	}
	if reenabled {
		s.resume(ctx, e.ID())
	}
	return e, nil
}
