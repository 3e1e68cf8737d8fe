package app

import (
	"context"
	"errors"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"

	"rentalplatform/verification-svc/internal/domain"
)

// Get returns the caller's session, or SessionNotFound.
func (s *Service) Get(ctx context.Context, caller Caller, id string) (*domain.Session, error) {
	if !validID(id) {
		return nil, domain.SessionNotFound(id)
	}
	return s.Sessions.Get(ctx, id, caller.Account, caller.Livemode)
}

// GetReport returns the caller's session whose report id is given (the report lives in its
// session's document), or ReportNotFound.
func (s *Service) GetReport(ctx context.Context, caller Caller, id string) (*domain.Session, error) {
	if !ids.Valid(ids.VerificationReport, id) {
		return nil, domain.ReportNotFound(id)
	}
	v, err := s.Sessions.Get(ctx, domain.SessionOfReport(id), caller.Account, caller.Livemode)
	if errors.Is(err, domain.ErrSessionNotFound) || (err == nil && v.Report() == nil) {
		return nil, domain.ReportNotFound(id)
	}
	return v, err
}

// List returns one page of the caller's sessions, newest first, and whether more lie beyond it
// in the direction read. A cursor is only a position (ids sort by creation time), so it is not
// looked up.
func (s *Service) List(ctx context.Context, caller Caller, f domain.Filter, p listing.Params) ([]*domain.Session, bool, error) {
	return s.Sessions.List(ctx, caller.Account, caller.Livemode, f, p)
}
