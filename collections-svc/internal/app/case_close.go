package app

import (
	"context"

	"rentalplatform/collections-svc/internal/domain"
)

// CloseCase closes an active or paused case with a close code (collection_case.updated and
// collection_case.closed). The code is checked before the case is read: a bad code is a 400
// naming close_code whatever the case's state.
func (s *Service) CloseCase(ctx context.Context, caller Caller, id string, closeCode *string) (*domain.Case, error) {
	code, err := domain.ParseCloseCode("close_code", closeCode)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, caller, id, func(c *domain.Case) error { return c.Close(code) })
}
