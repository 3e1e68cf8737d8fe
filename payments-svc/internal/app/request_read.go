package app

import (
	"context"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"

	"rentalplatform/payments-svc/internal/domain"
)

// GetRequest returns the caller's payment request.
func (s *Service) GetRequest(ctx context.Context, caller Caller, id string) (*domain.Request, error) {
	if !ids.Valid(ids.PaymentRequest, id) {
		return nil, domain.RequestNotFound(id)
	}
	return s.Requests.Get(ctx, id, caller.Account, caller.Livemode)
}

// ListRequests returns one page of the caller's payment requests, newest first.
func (s *Service) ListRequests(ctx context.Context, caller Caller, f domain.RequestFilter, p listing.Params) ([]*domain.Request, bool, error) {
	return s.Requests.List(ctx, caller.Account, caller.Livemode, f, p)
}
