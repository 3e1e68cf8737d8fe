package app

import (
	"context"
	"errors"

	"rentalplatform/libs/eventtype"

	"rentalplatform/webhooks-svc/internal/domain"
)

// noteOutcome keeps the endpoint's failing streak (and auto-disable) up to date after an
// attempt, and disables the endpoint on 410 Gone. ep is the endpoint as read before the
// attempt; it is only written when something changes, so the common case (a success after
// successes) costs no write.
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
			if e.Status() != domain.StatusEnabled {
				return errUnchanged
			}
			e.Disable()
			return s.emitDisabled(e)
		}
	default:
		if !ep.FailingSince().IsZero() && now.Sub(ep.FailingSince()) < s.cfg.AutoDisableAfter {
			return nil
		}
		fn = func(e *domain.Endpoint) error {
			changed, disabled := e.DeliveryFailed(now, s.cfg.AutoDisableAfter)
			if !changed {
				return errUnchanged
			}
			if disabled {
				return s.emitDisabled(e)
			}
			return nil
		}
	}
	e, err := s.Endpoints.Update(ctx, ep.ID(), ep.Account(), ep.Livemode(), fn)
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

// emitDisabled raises webhook_endpoint.disabled, a background transition (no API request).
func (s *Service) emitDisabled(e *domain.Endpoint) error {
	return s.emit(e, eventtype.WebhookEndpointDisabled, nil, map[string]any{"status": domain.StatusEnabled})
}

func disableReason(o domain.Outcome) string {
	if o == domain.Gone {
		return "410 Gone"
	}
	return "every delivery failed for the auto-disable period"
}
