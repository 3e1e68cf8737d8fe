package app

import (
	"context"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Delete deletes the caller's endpoint; its id is not reused. The endpoint is marked deleted
// with the webhook_endpoint.deleted event in one write, and removed for good once the event is
// published. Its pending deliveries fail: there is nowhere left to deliver them.
func (s *Service) Delete(ctx context.Context, caller Caller, id string) error {
	if !validID(id) {
		return domain.EndpointNotFound(id)
	}
	_, err := s.Endpoints.Update(events.CausedBy(ctx, caller), id, caller.Account, caller.Livemode, func(e *domain.Endpoint) error {
		e.Delete()
		return nil
	})
	if err != nil {
		return err
	}
	pending, err := s.Deliveries.Pending(ctx, id)
	if err != nil {
		s.Log.WarnContext(ctx, "failing the pending deliveries of a deleted endpoint", "endpoint", id, "error", err.Error())
		return nil
	}
	for _, d := range pending {
		if err := s.abandon(ctx, d.ID()); err != nil {
			s.Log.WarnContext(ctx, "failing a pending delivery of a deleted endpoint", "delivery", d.ID(), "error", err.Error())
		}
	}
	return nil
}
