package app

import (
	"context"

	"rentalplatform/libs/listing"

	"rentalplatform/verification-svc/internal/domain"
)

// List returns one page of the caller's sessions, newest first, and whether more lie beyond it
// in the direction read. A cursor is only a position (ids sort by creation time), so it is not
// looked up.
func (s *Service) List(ctx context.Context, caller Caller, f domain.Filter, p listing.Params) ([]*domain.Session, bool, error) {
	return s.Sessions.List(ctx, caller.Account, caller.Livemode, f, p)
}
