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

// ListDeliveries returns one page of the caller's deliveries, of every event and endpoint
// (an event's own destination included), newest first, narrowed by f. The endpoint and event
// of f are not looked up: like a cursor they only select, so an id the caller does not have
// (deleted, purged, another account's) lists nothing rather than answering 404.
func (s *Service) ListDeliveries(ctx context.Context, caller Caller, f domain.DeliveryFilter, p listing.Params) ([]*domain.Delivery, bool, error) {
	return s.Deliveries.List(ctx, caller.Account, caller.Livemode, f, p)
}
