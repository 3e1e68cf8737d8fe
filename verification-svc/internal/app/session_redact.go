package app

import (
	"context"

	"rentalplatform/verification-svc/internal/domain"
)

// Redact removes the applicant's personal data from the caller's session once it has reached
// its outcome; a running session is refused (400 invalid_state), a redacted one returned as it
// is.
func (s *Service) Redact(ctx context.Context, caller Caller, id string) (*domain.Session, error) {
	return s.change(ctx, caller, id, func(v *domain.Session) error {
		_, err := v.Redact(s.Now())
		return err
	})
}
