package app

import (
	"context"

	"rentalplatform/collections-svc/internal/domain"
)

// ResumeCase restarts collection on a paused case (collection_case.updated).
func (s *Service) ResumeCase(ctx context.Context, caller Caller, id string) (*domain.Case, error) {
	return s.change(ctx, caller, id, (*domain.Case).Resume)
}
