package app

import (
	"context"

	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

// ListEventDeliveries returns one page of the deliveries of the caller's event, newest first.
func (s *Service) ListEventDeliveries(ctx context.Context, caller Caller, event string, p listing.Params) ([]*domain.Delivery, bool, error) {
	if _, err := s.GetEvent(ctx, caller, event); err != nil {
		return nil, false, err
	}
	return s.Deliveries.List(ctx, caller.Account, caller.Livemode, domain.DeliveryFilter{Event: event}, p)
}

// ListEndpointDeliveries returns one page of the deliveries to the caller's endpoint, newest
// first.
func (s *Service) ListEndpointDeliveries(ctx context.Context, caller Caller, endpoint string, p listing.Params) ([]*domain.Delivery, bool, error) {
	if _, err := s.Get(ctx, caller, endpoint); err != nil {
		return nil, false, err
	}
	return s.Deliveries.List(ctx, caller.Account, caller.Livemode, domain.DeliveryFilter{Endpoint: endpoint}, p)
}
