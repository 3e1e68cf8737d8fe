package app

import (
	"context"

	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

// ListDeliveries returns one page of the caller's deliveries, of every event and endpoint
// (an event's own destination included), newest first, narrowed by f. The endpoint and event
// of f are not looked up: like a cursor they only select, so an id the caller does not have
// (deleted, purged, another account's) lists nothing rather than answering 404.
func (s *Service) ListDeliveries(ctx context.Context, caller Caller, f domain.DeliveryFilter, p listing.Params) ([]*domain.Delivery, bool, error) {
	return s.Deliveries.List(ctx, caller.Account, caller.Livemode, f, p)
}
