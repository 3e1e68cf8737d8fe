package app

import (
	"context"

	"rentalplatform/webhooks-svc/internal/domain"
)

// resume schedules every pending delivery of a re-enabled endpoint now. Failures are logged:
// the endpoint is enabled either way, and a delivery left unscheduled is still pending and can
// be retried by hand.
func (s *Service) resume(ctx context.Context, endpoint string) {
	pending, err := s.Deliveries.Pending(ctx, endpoint)
	if err != nil {
		s.Log.WarnContext(ctx, "resuming the deliveries of a re-enabled endpoint", "endpoint", endpoint, "error", err.Error())
		return
	}
	now := s.Now()
	for _, p := range pending {
		d, err := s.Deliveries.UpdateAny(ctx, p.ID(), func(d *domain.Delivery) error {
			if !d.Resume(now) {
				return errUnchanged
			}
			return nil
		})
		if err == nil {
			err = s.ensureScheduled(ctx, d)
		}
		if err = ignoreUnchanged(err); err != nil {
			s.Log.WarnContext(ctx, "resuming a delivery", "delivery", p.ID(), "error", err.Error())
		}
	}
}
