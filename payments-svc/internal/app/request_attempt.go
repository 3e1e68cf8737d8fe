package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

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
	run := attempt{s: s, id: id, n: n, token: newToken(), agreement: a, methods: a.UsableMethods()}
	// The claim, the charges and the record, as one change of the store's (Attempt): the
	// claim is stored before anything is charged, unless the store holds the request while the
	// charges run (then a crash stores nothing, and the attempt runs again under the same
	// idempotency keys).
	r, charged, err := s.Requests.Attempt(ctx, id, run.claim, run.charge, run.record)
	switch {
	case errors.Is(err, errNotCharged), errors.Is(err, domain.ErrAttemptObsolete):
		// Cancelled with its agreement, or a duplicate or late task, or another run took the
		// attempt over and records the same outcome.
		return nil
	case err != nil:
		return fmt.Errorf("attempt %d of %s: %w", n, id, err)
	}
	outcome := domain.OutcomeOf(r)
	s.Outcomes.AttemptRecorded(ctx, outcome)
	if err := s.failMethods(ctx, a.ID(), charged.Hard); err != nil {
		return fmt.Errorf("attempt %d of %s: %w", n, id, err)
	}
	if outcome == domain.OutcomeRetrying {
		next, due := r.Scheduled()
		// Not bounded by this run's deadline: the outcome is recorded, and a run that used
		// its time charging (a slow processor, a busy machine) must still queue its retry,
		// which the reconciler would otherwise queue only once it is overdue (seen in a
		// fresh-clone CI run: 5 of 100 retries missing, "context deadline exceeded"). The
		// Redis client's own timeouts bound the call.
		if _, err := s.Scheduler.Schedule(context.WithoutCancel(ctx), id, next, due); err != nil {
			// Recorded, so not lost: the reconciler queues it once it is overdue.
			s.Log.WarnContext(ctx, "queueing the next attempt failed; the reconciler will",
				"payment_request", id, "attempt", next, "error", err.Error())
		}
	}
	return nil
}

// errNotCharged ends an attempt at its claim: the request was cancelled with its agreement.
var errNotCharged = errors.New("the request was cancelled with its agreement, not charged")

// attempt is one run of attempt n of a request, as three steps the store runs in order
// (Requests.Attempt): claim, charge and record. Each gets what the one before it stored or
// returned; what they share is fixed before the first runs.
type attempt struct {
	s         *Service
	id        string
	n         int
	token     string // the claim's: a record under another token is another run's
	agreement *domain.Agreement
	methods   []domain.Method // the agreement's usable methods, in order
}

// claim marks the request as charging under the run's token (payment_request.processing when
// it was pending), or cancels it instead when its agreement was cancelled. An attempt that is
// not due, or is claimed by a run still fresh, is a *RetryAt for when it can run.
func (a attempt) claim(r *domain.Request) error {
	if !a.agreement.Active() && r.Status().Open() && !r.Claimed() {
		_, err := r.Cancel(domain.StopAgreementCancelled, a.s.Now())
		return err
	}
	_, err := r.ClaimAttempt(a.n, a.token, a.s.Now(), a.s.cfg.ClaimTTL)
	switch {
	case errors.Is(err, domain.ErrAttemptNotDue):
		_, due := r.Scheduled()
		return &RetryAt{At: due, Reason: "not due yet"}
	case errors.Is(err, domain.ErrAttemptInProgress):
		return &RetryAt{At: r.ClaimedAt().Add(a.s.cfg.ClaimTTL), Reason: "being run elsewhere"}
	case errors.Is(err, domain.ErrAttemptObsolete):
		return err
	case err != nil:
		return fmt.Errorf("claim: %w", err)
	}
	return nil
}

// charge charges the usable methods in order until one succeeds. A request the claim cancelled
// is not charged (errNotCharged: the cancel is stored, nothing is recorded).
func (a attempt) charge(ctx context.Context, r *domain.Request) (domain.Charged, error) {
	if !r.Claimed() {
		return domain.Charged{}, errNotCharged
	}
	proc := a.s.processor(r.Livemode())
	if proc == nil {
		return domain.Charged{}, fmt.Errorf("no processor for livemode=%t", r.Livemode())
	}
	var c domain.Charged
	for _, m := range a.methods {
		res, err := proc.Charge(ctx, Charge{
			IdempotencyKey: a.id + ":" + strconv.Itoa(a.n) + ":" + m.ID,
			Request:        a.id, Attempt: a.n, Method: m.ID, Type: m.Type, Token: m.Token,
			Amount: r.Amount(), Currency: r.Currency(),
		})
		if err != nil {
			// The outcome is unknown: keep the claim, so nothing else touches the request, and
			// run the attempt again once it is stale; the charges made so far are answered
			// from their idempotency keys then.
			return domain.Charged{}, fmt.Errorf("charge %s: %w", m.ID, err)
		}
		t := domain.Try{ID: a.s.IDs.New(ids.Charge), Attempt: a.n, Method: m.ID, Succeeded: res.Succeeded, FailureCode: res.FailureCode, At: a.s.Now()}
		c.Tries = append(c.Tries, t)
		if res.Succeeded {
			break
		}
		if res.Hard {
			c.Hard = append(c.Hard, t)
		}
	}
	return c, nil
}

// record stores the attempt's outcome with its charges. The charges' events, then the
// request's, are all raised by Record and stored by the write that records the outcome: none
// is raised for a charge whose record is lost.
func (a attempt) record(r *domain.Request, c domain.Charged) error {
	_, err := r.Record(a.n, a.token, c.Tries, len(c.Hard) < len(a.methods))
	if err != nil && !errors.Is(err, domain.ErrAttemptObsolete) {
		return fmt.Errorf("record: %w", err)
	}
	return err
}

// failMethods marks the methods that were hard-declined as failed on the agreement
// (payment_agreement.updated), so later attempts of every request skip them.
func (s *Service) failMethods(ctx context.Context, agreement string, hard []domain.Try) error {
	if len(hard) == 0 {
		return nil
	}
	_, err := s.Agreements.UpdateAny(ctx, agreement, func(a *domain.Agreement) error {
		a.FailMethods(hard)
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark payment methods failed on %s: %w", agreement, err)
	}
	return nil
}
