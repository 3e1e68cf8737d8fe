package app

import (
	"context"
	"errors"

	"rentalplatform/webhooks-svc/internal/domain"
)

// noteOutcome keeps the endpoint's failing streak (and auto-disable) up to date after an
// attempt, and disables the endpoint on 410 Gone. ep is the endpoint as read before the
// attempt; it is only written when something changes, so the common case (a success after
// successes) costs no write. It is the service's own work: webhook_endpoint.disabled names no
// request.
func (s *Service) noteOutcome(ctx context.Context, ep *domain.Endpoint, o domain.Outcome, res domain.Result) error {
	if ep.IsDestination() {
		return nil // an event's own destination has no health to keep, nothing to disable
	}
	now := s.Now()
	var fn func(e *domain.Endpoint) error
	switch o {
	case domain.Succeeded:
		if ep.FailingSince().IsZero() {
			return nil
		}
		fn = func(e *domain.Endpoint) error {
			if !e.DeliverySucceeded() {
				return errUnchanged
			}
			return nil
		}
	case domain.Gone:
		fn = func(e *domain.Endpoint) error {
			if !e.DeliveryGone() {
				return errUnchanged
			}
			return nil
		}
	default:
		if !ep.FailingSince().IsZero() && now.Sub(ep.FailingSince()) < s.cfg.AutoDisableAfter {
			return nil
		}
		fn = func(e *domain.Endpoint) error {
			if changed, _ := e.DeliveryFailed(now, s.cfg.AutoDisableAfter); !changed {
				return errUnchanged
			}
			return nil
		}
	}
	e, err := s.Endpoints.UpdateAny(ctx, ep.ID(), fn)
	if errors.Is(err, errUnchanged) || errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if e.Status() == domain.StatusDisabled && ep.Status() == domain.StatusEnabled {
		s.Log.WarnContext(ctx, "webhook endpoint disabled", "endpoint", e.ID(), "account", e.Account(),
			"reason", disableReason(o), "status", res.Status)
	}
	return nil
}

func disableReason(o domain.Outcome) string {
	if o == domain.Gone {
		return "410 Gone"
	}
	return "every delivery failed for the auto-disable period"
}
