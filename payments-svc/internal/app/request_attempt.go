package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// RetryAt is the error of an attempt run that must run again at a known time: the attempt is
// not due yet (its task ran early), or another run holds a fresh claim on it (which is stale
// from At on). The worker has the task retried then.
type RetryAt struct {
	At     time.Time
	Reason string
}

func (e *RetryAt) Error() string {
	return e.Reason + "; run again at " + e.At.UTC().Format(time.RFC3339)
}

// RunAttempt runs attempt n of a request: the engine's one way of charging. It claims the
// request (so nothing else changes it while it charges), charges the agreement's usable
// methods in order until one succeeds, records the outcome (succeeded, a retry scheduled, or
// failed) with the charges made, each a charge (ch_…) with its charge.succeeded or
// charge.failed event, and queues the next attempt. A request that is closed or past attempt
// n makes it a no-op (a duplicate or late task); one whose attempt is not due yet is queued
// again for its time; one whose agreement was cancelled is cancelled instead of charged.
//
// Each charge carries the idempotency key "<request>:<n>:<method>", so a run that died after
// charging and before recording is run again (its claim has gone stale) without charging
// twice. It returns an error only when the run must be retried: a *RetryAt when that must
// wait (the attempt is not due, or another run holds a fresh claim on it), any other when the
// store or the processor did not answer.
func (s *Service) RunAttempt(ctx context.Context, id string, n int) error {
	r, err := s.Requests.Load(ctx, id)
	if errors.Is(err, domain.ErrRequestNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	a, err := s.Agreements.Load(ctx, r.Agreement())
	if err != nil {
		return fmt.Errorf("attempt %d of %s: agreement: %w", n, id, err)
	}
	loaded, token := r, newToken()
	// The claim, the charges and the record, as one change of the store's (Attempt): the
	// claim is stored before anything is charged, unless the store holds the request while the
	// charges run (then a crash stores nothing, and the attempt runs again under the same
	// idempotency keys). phase says which step an error comes from.
	var (
		phase     string
		cancelled bool
		tries     []domain.Try
		hard      []domain.Try
		outcome   domain.Outcome
	)
	methods := a.UsableMethods()
	claim := func(r *domain.Request) error {
		phase, cancelled = "claim", false
		if !a.Active() && r.Status().Open() && !r.Claimed() {
			changed, err := r.Cancel(domain.StopAgreementCancelled, s.Now())
			if err != nil || !changed {
				return err
			}
			cancelled = true
			return s.emitRequest(r, eventtype.PaymentRequestCancelled, nil)
		}
		started, err := r.ClaimAttempt(n, token, s.Now(), s.cfg.ClaimTTL)
		if err != nil || !started {
			return err
		}
		return s.emitRequest(r, eventtype.PaymentRequestProcessing, nil)
	}
	charge := func(ctx context.Context, r *domain.Request) error {
		phase, tries, hard = "charge", nil, nil
		if cancelled {
			return nil
		}
		proc := s.processor(r.Livemode())
		if proc == nil {
			return fmt.Errorf("attempt %d of %s: no processor for livemode=%t", n, id, r.Livemode())
		}
		for _, m := range methods {
			res, err := proc.Charge(ctx, Charge{
				IdempotencyKey: id + ":" + strconv.Itoa(n) + ":" + m.ID,
				Request:        id, Attempt: n, Method: m.ID, Type: m.Type, Token: m.Token,
				Amount: r.Amount(), Currency: r.Currency(),
			})
			if err != nil {
				// The outcome is unknown: keep the claim, so nothing else touches the
				// request, and run the attempt again once it is stale; the charges made so
				// far are answered from their idempotency keys then.
				return fmt.Errorf("attempt %d of %s: charge %s: %w", n, id, m.ID, err)
			}
			t := domain.Try{ID: s.IDs.New(ids.Charge), Attempt: n, Method: m.ID, Succeeded: res.Succeeded, FailureCode: res.FailureCode, At: s.Now()}
			tries = append(tries, t)
			if res.Succeeded {
				break
			}
			if res.Hard {
				hard = append(hard, t)
			}
		}
		return nil
	}
	record := func(r *domain.Request) error {
		phase = "record"
		if cancelled {
			return nil
		}
		var err error
		if outcome, err = r.Record(n, token, tries, len(hard) < len(methods)); err != nil {
			return err
		}
		// The charges' events, then the request's, all stored by the write that records the
		// outcome: none is raised for a charge whose record is lost.
		for _, t := range tries {
			if err := s.emitCharge(r, t); err != nil {
				return err
			}
		}
		return s.emitRequest(r, requestEvent[outcome], nil)
	}
	r, err = s.Requests.Attempt(ctx, id, claim, charge, record)
	switch {
	case err == nil:
	case phase == "charge":
		return err
	case phase == "record" && errors.Is(err, domain.ErrAttemptObsolete):
		return nil // another run took the attempt over and records the same outcome
	case phase == "record":
		return fmt.Errorf("attempt %d of %s: record: %w", n, id, err)
	case errors.Is(err, domain.ErrAttemptObsolete):
		return nil
	case errors.Is(err, domain.ErrAttemptNotDue):
		_, due := loaded.Scheduled()
		return &RetryAt{At: due, Reason: fmt.Sprintf("attempt %d of %s is not due yet", n, id)}
	case errors.Is(err, domain.ErrAttemptInProgress):
		return &RetryAt{At: loaded.ClaimedAt().Add(s.cfg.ClaimTTL), Reason: fmt.Sprintf("attempt %d of %s is being run elsewhere", n, id)}
	default:
		return fmt.Errorf("attempt %d of %s: claim: %w", n, id, err)
	}
	if cancelled {
		return nil
	}
	s.Outcomes.AttemptRecorded(ctx, outcome)
	if err := s.failMethods(ctx, a.ID(), hard); err != nil {
		return fmt.Errorf("attempt %d of %s: %w", n, id, err)
	}
	if outcome == domain.OutcomeRetrying {
		next, due := r.Scheduled()
		if _, err := s.Scheduler.Schedule(ctx, id, next, due); err != nil {
			// Recorded, so not lost: the reconciler queues it once it is overdue.
			s.Log.WarnContext(ctx, "queueing the next attempt failed; the reconciler will",
				"payment_request", id, "attempt", next, "error", err.Error())
		}
	}
	return nil
}

// failMethods marks the methods that were hard-declined as failed on the agreement
// (payment_agreement.updated), so later attempts of every request skip them.
func (s *Service) failMethods(ctx context.Context, agreement string, hard []domain.Try) error {
	if len(hard) == 0 {
		return nil
	}
	_, err := s.Agreements.Update(ctx, agreement, "", false, func(a *domain.Agreement) error {
		before, err := events.FieldsOf(s.cfg.RenderAgreement(a))
		if err != nil {
			return err
		}
		changed := false
		for _, t := range hard {
			changed = a.FailMethod(t.Method, t.FailureCode) || changed
		}
		if !changed {
			return nil
		}
		return s.emitAgreement(a, eventtype.PaymentAgreementUpdated, nil, map[string]any{"payment_methods": before["payment_methods"]})
	})
	if err != nil {
		return fmt.Errorf("mark payment methods failed on %s: %w", agreement, err)
	}
	return nil
}
