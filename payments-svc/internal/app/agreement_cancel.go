package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// CancelAgreement cancels the caller's agreement (payment_agreement.cancelled) and then its
// pending and processing requests, each with retry_stop_reason agreement_cancelled
// (payment_request.cancelled, naming the caller's request as the agreement's event does); an
// attempt already charging one of them finishes first. A request whose attempt outlasts the
// cancel's wait is cancelled by the reconciler once the attempt has recorded its outcome (an
// event of the engine's, naming no request). Cancelling a cancelled agreement returns it
// unchanged (and finishes a cascade left unfinished).
func (s *Service) CancelAgreement(ctx context.Context, caller Caller, id string) (*domain.Agreement, error) {
	if !ids.Valid(ids.PaymentAgreement, id) {
		return nil, domain.AgreementNotFound(id)
	}
	ctx = events.CausedBy(ctx, caller)
	a, err := s.Agreements.Update(ctx, id, caller.Account, caller.Livemode, func(a *domain.Agreement) error {
		a.Cancel(s.Now())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if a.Cascading() {
		if err := s.cascade(ctx, a.ID()); err != nil {
			// The agreement is cancelled: that is the answer. The reconciler finishes the rest.
			s.Log.WarnContext(ctx, "cancelling the requests of a cancelled agreement: left to the reconciler",
				"payment_agreement", a.ID(), "error", err.Error())
		}
	}
	return a, nil
}

// cascade cancels the open requests of a cancelled agreement, then records that it is done.
// Their events name the request that cancelled the agreement when ctx names one
// (events.CausedBy), none for the reconciler.
func (s *Service) cascade(ctx context.Context, agreement string) error {
	open, err := s.Requests.OpenFor(ctx, agreement)
	if err != nil {
		return err
	}
	// The requests share one wait for attempts charging them.
	deadline := time.Now().Add(s.cfg.CancelWait)
	var errs []error
	for _, r := range open {
		if _, err := s.cancelRequest(ctx, r.ID(), r.Account(), r.Livemode(), domain.StopAgreementCancelled, time.Until(deadline)); err != nil &&
			!errors.Is(err, domain.ErrRequestNotFound) {
			errs = append(errs, fmt.Errorf("cancel %s: %w", r.ID(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_, err = s.Agreements.UpdateAny(ctx, agreement, func(a *domain.Agreement) error {
		a.CascadeDone()
		return nil
	})
	return err
}
