package app

import (
	"context"
	"errors"

	"rentalplatform/libs/ids"

	"rentalplatform/webhooks-svc/internal/domain"
)

// RetryDelivery sends the caller's delivery again now, whatever its status. A pending delivery
// runs its next attempt early and carries on with its schedule if that fails; a delivery that
// had ended becomes pending until this one attempt ends it again. A delivery whose endpoint is
// disabled or deleted is refused, since nothing would be sent.
func (s *Service) RetryDelivery(ctx context.Context, caller Caller, id string) (*domain.Delivery, error) {
	if !ids.Valid(domain.DeliveryIDPrefix, id) {
		return nil, domain.DeliveryNotFound(id)
	}
	d, err := s.Deliveries.Get(ctx, id, caller.Account, caller.Livemode)
	if err != nil {
		return nil, err
	}
	if !d.ToDestination() {
		ep, err := s.Endpoints.Get(ctx, d.Endpoint(), caller.Account, caller.Livemode)
		if errors.Is(err, domain.ErrNotFound) {
			return nil, domain.ErrEndpointGone
		}
		if err != nil {
			return nil, err
		}
		if ep.Status() != domain.StatusEnabled {
			return nil, domain.ErrEndpointDisabled
		}
	}
	now := s.Now()
	d, err = s.Deliveries.Update(ctx, id, caller.Account, caller.Livemode, func(d *domain.Delivery) error {
		d.Retry(now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The event counts the delivery as pending again before the attempt can end it.
	if err := s.settle(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}
