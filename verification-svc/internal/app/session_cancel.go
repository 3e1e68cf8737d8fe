package app

import (
	"context"

	"rentalplatform/verification-svc/internal/domain"
)

// Cancel cancels the caller's session unless it completed (400 invalid_state); a canceled one
// is returned as it is. reason is validated before the session is read, so bad input is a 400
// whether or not the session exists. The session's last_error and attempts are kept.
func (s *Service) Cancel(ctx context.Context, caller Caller, id string, reason *string) (*domain.Session, error) {
	var r domain.CancellationReason
	if reason != nil {
		var err error
		if r, err = domain.ParseCancellationReason(*reason); err != nil {
			return nil, err
		}
	}
	return s.change(ctx, caller, id, func(v *domain.Session) error {
		_, err := v.Cancel(s.Now(), r)
		return err
	})
}
