package app

import (
	"context"

	"rentalplatform/libs/domainerr"

	"rentalplatform/verification-svc/internal/domain"
)

// ErrTestModeOnly answers the test helper in live mode: live sessions move only as their
// verification provider reports, so the route does not exist there.
var ErrTestModeOnly = domainerr.New(domainerr.NotFound, "route_missing", "",
	"Test helpers exist in test mode only; this request was made with a live-mode key.")

// Advance moves the caller's test-mode session along one edge of the lifecycle (the test
// helper), refusing any other move with 400 invalid_state.
func (s *Service) Advance(ctx context.Context, caller Caller, id string, a domain.Advance) (*domain.Session, error) {
	if caller.Livemode {
		return nil, ErrTestModeOnly
	}
	return s.change(ctx, caller, id, func(v *domain.Session) error {
		return v.Apply(s.Now(), a)
	})
}
