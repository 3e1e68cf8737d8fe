package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Deliver runs the attempt task numbered attempt of a delivery: it POSTs the event, signed, to
// the endpoint, records the attempt, and schedules the next one or ends the delivery. A task
// the delivery no longer awaits (it was rescheduled meanwhile) sends nothing and only makes
// sure the delivery's current state has had its effects; an attempt that was rescheduled while
// in flight is still recorded (domain.Superseded). An endpoint that is disabled gets no attempt: the delivery
// waits, pending, until the endpoint is enabled again. An error means the attempt could not be
// recorded (the store is down) and the task should run again.
func (s *Service) Deliver(ctx context.Context, id string, attempt int) error {
	// A stale copy (another process moved the delivery on) at worst sends an attempt that is
	// then recorded as superseded: Update below writes only over the stored version.
	d, err := s.Deliveries.Cached(ctx, id)
	if errors.Is(err, domain.ErrDeliveryNotFound) {
		return nil // purged with its event
	}
	if err != nil {
		return err
	}
	if !d.Due(attempt) {
		return s.settle(ctx, d)
	}
	if d.ToDestination() {
		ev, err := s.Events.Event(ctx, d.Event())
		if errors.Is(err, domain.ErrEventNotFound) {
			return s.abandon(ctx, id)
		}
		if err != nil {
			return err
		}
		ep, ok := domain.DestinationEndpoint(ev)
		if !ok {
			return s.abandon(ctx, id)
		}
		return s.attempt(ctx, d, attempt, ep, ev)
	}
	// The endpoint comes from the delivery path's cache; a disabled or deleted one is read
	// again from the store before the delivery is parked or abandoned for it, since the cache
	// may not have seen it enabled again (or created) by another process yet.
	ep, err := s.Endpoints.Cached(ctx, d.Endpoint(), d.Account(), d.Livemode())
	if errors.Is(err, domain.ErrNotFound) || (err == nil && ep.Status() != domain.StatusEnabled) {
		ep, err = s.Endpoints.Get(ctx, d.Endpoint(), d.Account(), d.Livemode())
	}
	if errors.Is(err, domain.ErrNotFound) {
		return s.abandon(ctx, id)
	}
	if err != nil {
		return err
	}
	if ep.Status() != domain.StatusEnabled {
		_, err := s.Deliveries.UpdateAny(ctx, id, func(d *domain.Delivery) error {
			if !d.Park(attempt) {
				return errUnchanged
			}
			return nil
		})
		return ignoreUnchanged(err)
	}
	ev, err := s.Events.Event(ctx, d.Event())
	if errors.Is(err, domain.ErrEventNotFound) {
		return s.abandon(ctx, id)
	}
	if err != nil {
		return err
	}
	return s.attempt(ctx, d, attempt, ep, ev)
}

// attempt sends attempt number attempt of d, ev to ep, and records what came of it.
func (s *Service) attempt(ctx context.Context, d *domain.Delivery, attempt int, ep *domain.Endpoint, ev events.Event) error {
	req, err := s.request(ep, ev)
	if err != nil {
		return err
	}
	res := s.Sender.Send(ctx, req)
	s.logFailure(ctx, d, ev, attempt, res)
	return s.record(ctx, d.ID(), attempt, ep, res)
}

// logFailure writes the sender's own error of an attempt that got no response to the log,
// once per attempt, with what support needs to find it (the logger adds the trace and span). The API shows only the attempt's
// category and its message: this error can name the platform's DNS resolver and the internal
// address a name resolved to. A refusal by the private-address guard is a warning (an
// endpoint pointing inside, by mistake or to probe); the rest is the receivers' business.
func (s *Service) logFailure(ctx context.Context, d *domain.Delivery, ev events.Event, attempt int, res domain.Result) {
	if res.Cause == nil {
		return
	}
	level := slog.LevelInfo
	if res.ErrorCode == domain.AttemptAddressNotAllowed {
		level = slog.LevelWarn
	}
	if !s.Log.Enabled(ctx, level) {
		return
	}
	requestID := ""
	if ev.Request.ID != nil {
		requestID = *ev.Request.ID
	}
	s.Log.LogAttrs(ctx, level, "webhook delivery attempt failed",
		slog.String("delivery", d.ID()),
		slog.Int("attempt", attempt),
		slog.String("event", ev.ID),
		slog.String("endpoint", d.Endpoint()),
		slog.String("account", d.Account()),
		slog.String("request_id", requestID),
		slog.String("error_code", string(res.ErrorCode)),
		slog.String("error", res.Cause.Error()),
	)
}

// request is the signed POST of ev to ep, as of now.
func (s *Service) request(ep *domain.Endpoint, ev events.Event) (Request, error) {
	now := s.Now()
	body, err := json.Marshal(events.Render(ev, ep.APIVersion()))
	if err != nil {
		return Request{}, fmt.Errorf("render event %s: %w", ev.ID, err)
	}
	return Request{URL: ep.URL(), MessageID: ev.ID, Timestamp: now, Body: body, Secrets: ep.SigningSecrets(now)}, nil
}

// record stores the result of attempt number attempt of the stored delivery id, then has the
// delivery's new state take effect (settle) and the endpoint's health follow (noteOutcome).
func (s *Service) record(ctx context.Context, id string, attempt int, ep *domain.Endpoint, res domain.Result) error {
	var outcome domain.Outcome
	d, err := s.Deliveries.UpdateAny(ctx, id, func(d *domain.Delivery) error {
		o, err := d.Record(attempt, res, s.cfg.Schedule, s.rnd())
		outcome = o
		return err
	})
	if err != nil {
		return err
	}
	if err := s.settle(ctx, d); err != nil {
		return err
	}
	if outcome == domain.Superseded {
		return nil
	}
	return s.noteOutcome(ctx, ep, outcome, res)
}

// settle makes sure a delivery's state has had its effects: a pending delivery with an attempt
// due has that attempt queued, and the event knows where each delivery stands (its
// pending_webhooks). Both steps are idempotent, so a task that runs again after a crash
// completes what the first run left undone.
func (s *Service) settle(ctx context.Context, d *domain.Delivery) error {
	if err := s.ensureScheduled(ctx, d); err != nil {
		return err
	}
	err := s.Events.SetDeliveryStatus(ctx, d.Event(), d.ID(), d.Status())
	if errors.Is(err, domain.ErrEventNotFound) {
		return nil
	}
	return err
}

// ensureScheduled queues the attempt a pending delivery awaits, if it has one.
func (s *Service) ensureScheduled(ctx context.Context, d *domain.Delivery) error {
	if d.Status() != domain.DeliveryPending || d.NextAttemptAt().IsZero() {
		return nil
	}
	return s.Scheduler.Schedule(ctx, d.ID(), d.Seq(), d.NextAttemptAt())
}

// abandon fails a pending delivery that can never be made.
func (s *Service) abandon(ctx context.Context, id string) error {
	d, err := s.Deliveries.UpdateAny(ctx, id, func(d *domain.Delivery) error {
		if !d.Abandon() {
			return errUnchanged
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		if d, err = s.Deliveries.Load(ctx, id); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	return s.settle(ctx, d)
}
