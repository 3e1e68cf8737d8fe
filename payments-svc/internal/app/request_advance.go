package app

import (
	"context"

	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// AdvanceRequest is the test helper that runs a request's scheduled retry now, exactly as if
// next_retry_at had arrived: the retry becomes due now and its task is run by the engine (the
// one owner of attempts; nothing runs beside it). It waits up to Config.AdvanceWait for the
// attempt's outcome and returns the request as it stands then. Test mode only (404 with a live
// key); a request with no retry scheduled refuses with 400 invalid_state.
func (s *Service) AdvanceRequest(ctx context.Context, caller Caller, id string) (*domain.Request, error) {
	if caller.Livemode {
		return nil, errTestHelperLive
	}
	if !ids.Valid(ids.PaymentRequest, id) {
		return nil, domain.RequestNotFound(id)
	}
	var n int
	r, err := s.Requests.Update(ctx, id, caller.Account, caller.Livemode, func(r *domain.Request) error {
		var err error
		n, err = r.Advance(s.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.Scheduler.RunNow(ctx, id, n); err != nil {
		return nil, err
	}
	_, err = poll(ctx, s.cfg.AdvanceWait, func() (bool, error) {
		cur, err := s.Requests.Get(ctx, id, caller.Account, caller.Livemode)
		if err != nil {
			return false, err
		}
		r = cur
		return cur.Attempts() >= n || !cur.Status().Open(), nil
	})
	return r, err
}
