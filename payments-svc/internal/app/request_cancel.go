package app

import (
	"context"
	"errors"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// CancelRequest cancels the caller's pending or processing request and removes its scheduled
// attempt. A request an attempt is charging at that moment is cancelled once the attempt has
// recorded its outcome, if it is still open then: the cancel waits up to Config.CancelWait for
// that, then answers 409 attempt_in_progress. So a request is never both charged and cancelled.
// A succeeded or failed request refuses (400 invalid_state); a cancelled one is returned
// unchanged.
func (s *Service) CancelRequest(ctx context.Context, caller Caller, id string) (*domain.Request, error) {
	if !ids.Valid(ids.PaymentRequest, id) {
		return nil, domain.RequestNotFound(id)
	}
	return s.cancelRequest(events.CausedBy(ctx, caller), id, caller.Account, caller.Livemode, domain.StopCancelled, s.cfg.CancelWait)
}

// cancelRequest cancels a request of the account for reason (payment_request.cancelled,
// naming the request ctx names as its cause, if any), waiting up to wait for a charging
// attempt as CancelRequest says.
func (s *Service) cancelRequest(ctx context.Context, id, account string, livemode bool, reason domain.StopReason, wait time.Duration) (*domain.Request, error) {
	var out *domain.Request
	var scheduled int
	done, err := poll(ctx, wait, func() (bool, error) {
		r, err := s.Requests.Update(ctx, id, account, livemode, func(r *domain.Request) error {
			scheduled, _ = r.Scheduled()
			_, err := r.Cancel(reason, s.Now())
			return err
		})
		if errors.Is(err, domain.ErrAttemptInProgress) {
			return false, nil
		}
		out = r
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	if !done {
		return nil, domain.ErrAttemptInProgress
	}
	if scheduled > 0 && out.Status() == domain.StatusCancelled {
		// Best effort: a task that still runs finds the request closed and does nothing.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := s.Scheduler.Unschedule(ctx, id, scheduled); err != nil {
			s.Log.WarnContext(ctx, "removing the scheduled attempt of a cancelled request failed; it will find the request cancelled",
				"payment_request", id, "attempt", scheduled, "error", err.Error())
		}
	}
	return out, nil
}
