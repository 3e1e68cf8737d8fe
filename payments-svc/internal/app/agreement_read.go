package app

import (
	"context"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"

	"rentalplatform/payments-svc/internal/domain"
)

// GetAgreement returns the caller's agreement.
func (s *Service) GetAgreement(ctx context.Context, caller Caller, id string) (*domain.Agreement, error) {
	if !ids.Valid(ids.PaymentAgreement, id) {
		return nil, domain.AgreementNotFound(id)
	}
	return s.Agreements.Get(ctx, id, caller.Account, caller.Livemode)
}

// ListAgreements returns one page of the caller's agreements, newest first.
func (s *Service) ListAgreements(ctx context.Context, caller Caller, f domain.AgreementFilter, p listing.Params) ([]*domain.Agreement, bool, error) {
	return s.Agreements.List(ctx, caller.Account, caller.Livemode, f, p)
}
