package app

import (
	"context"

	"rentalplatform/libs/listing"

	"rentalplatform/collections-svc/internal/domain"
)

// GetCase returns the caller's case.
func (s *Service) GetCase(ctx context.Context, caller Caller, id string) (*domain.Case, error) {
	if !validCaseID(id) {
		return nil, domain.CaseNotFound(id)
	}
	return s.Cases.Get(ctx, id, caller.Account, caller.Livemode)
}

// GetCaseByReference returns the caller's case with the reference, in any letter case.
func (s *Service) GetCaseByReference(ctx context.Context, caller Caller, reference string) (*domain.Case, error) {
	ref, ok := domain.ParseReference(reference)
	if !ok {
		return nil, domain.ReferenceNotFound(reference)
	}
	return s.Cases.GetByReference(ctx, ref, caller.Account, caller.Livemode)
}

// ListCases returns one page of the caller's cases, newest first.
func (s *Service) ListCases(ctx context.Context, caller Caller, f domain.CaseFilter, p listing.Params) ([]*domain.Case, bool, error) {
	return s.Cases.List(ctx, caller.Account, caller.Livemode, f, p)
}
