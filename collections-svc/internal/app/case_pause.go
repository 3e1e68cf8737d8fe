package app

import (
	"context"

	"rentalplatform/collections-svc/internal/domain"
)

// PauseCase stops collection on an active case (collection_case.updated).
func (s *Service) PauseCase(ctx context.Context, caller Caller, id string) (*domain.Case, error) {
	return s.change(ctx, caller, id, (*domain.Case).Pause)
}
