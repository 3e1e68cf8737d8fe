package domain

import (
	"maps"
	"slices"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/validate"
)

// Limits on a payment request.
const (
	MaxAmount         = 99_999_999 // in the smallest currency unit, as card networks allow
	MaxDescriptionLen = 1000
)

// The retry schedule (spec §3.3, §8): attempt 1 at once, attempt 2 one day after the first
// failure, attempt 3 three days after the second.
const MaxAttempts = 3

// RetryDelay returns how long after attempt n failed attempt n+1 is due.
func RetryDelay(n int) time.Duration {
	if n == 1 {
		return 24 * time.Hour
	}
	return 72 * time.Hour
}

// Status is where a payment request stands.
type Status string

// Request statuses (spec §3.3).
const (
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusSucceeded  Status = "succeeded"
	StatusFailed     Status = "failed"
	StatusCancelled  Status = "cancelled"
)

// Statuses lists every status, for the list filter.
var Statuses = []Status{StatusPending, StatusProcessing, StatusSucceeded, StatusFailed, StatusCancelled}

// Open reports whether more collection may happen.
func (s Status) Open() bool { return s == StatusPending || s == StatusProcessing }

// StopReason says why no further attempt will be made.
type StopReason string

// Stop reasons.
const (
	StopSucceeded          StopReason = "succeeded"
	StopAttemptsExhausted  StopReason = "attempts_exhausted"
	StopCancelled          StopReason = "cancelled"
	StopAgreementCancelled StopReason = "agreement_cancelled"
	StopNoUsableMethod     StopReason = "no_usable_method"
)

// FailureNoUsableMethod is the failure reason of a request whose agreement had no method left
// to charge.
const FailureNoUsableMethod = "no_usable_method"

// Try is one method charged in one attempt: the API's charge object (attempt_log's entries,
// charge.* events).
type Try struct {
	// ID is the charge's id (ch_…): from the id generator when the charge is made; for a
	// charge stored before charges had ids, derived from the request, attempt and method on
	// rehydration (ChargeID).
	ID          string
	Attempt     int
	Method      string // pm_ id
	Succeeded   bool
	FailureCode string // "" on success
	At          time.Time
}

// Charged is what an attempt's charges did: the methods tried, in order, and those of them
// declined for good (Hard), which the agreement stops offering.
type Charged struct {
	Tries []Try
	Hard  []Try
}

// Claim marks the attempt that is charging the request. Nothing else changes the request while
// a claim is fresh, so it can never be both charged and cancelled; a claim older than the
// attempt timeout belongs to a worker that died, and the next run of the same attempt takes
// it over (and charges again with the same idempotency keys, which the processor answers
// with the first outcome).
type Claim struct {
	Attempt int
	Token   string
	At      time.Time
}

// Request is a payment request: one amount collected against an agreement, attempt by
// attempt.
type Request struct {
	id          string
	account     string
	livemode    bool
	agreement   string
	amount      int64
	currency    string
	description string
	metadata    map[string]string
	created     time.Time

	status        Status
	methodUsed    string
	failureReason string
	attempts      int
	nextRetryAt   time.Time
	stopReason    StopReason
	tries         []Try
	cancelledAt   time.Time

	// nextAttempt is the number of the attempt the engine runs next (0 once none will), and
	// dueAt when; both are the truth the reconciler restores Redis from.
	nextAttempt int
	dueAt       time.Time
	claim       *Claim

	// Recorder keeps the events the request's changes raised until the store renders them:
	// its own, and its charges' (RaisePart, with the Try).
	events.Recorder
}

// NewRequestParams is everything needed to create a request; the client's values are pointers,
// nil when not sent.
type NewRequestParams struct {
	ID       string
	Account  string
	Livemode bool
	Created  time.Time

	Agreement   string
	Amount      *int64
	Currency    *string
	Description *string
	Metadata    map[string]string
	// Param prefixes every parameter named in an error ("requests[3]." in a bulk create).
	Param string
}

// checkParams validates the client's values but metadata, naming parameters under p.Param,
// and returns the currency as stored.
func checkParams(p NewRequestParams) (currency string, err error) {
	if p.Amount == nil {
		return "", domainerr.Missing(p.Param + "amount")
	}
	if *p.Amount <= 0 || *p.Amount > MaxAmount {
		return "", invalid(p.Param+"amount", "Invalid %samount: must be an integer from 1 to %d in the smallest currency unit, got %d.", p.Param, MaxAmount, *p.Amount)
	}
	if p.Currency == nil {
		return "", domainerr.Missing(p.Param + "currency")
	}
	if currency, err = validate.Currency(p.Param+"currency", *p.Currency); err != nil {
		return "", err
	}
	if p.Description != nil {
		// Multi-line: a description may be a few lines of a note.
		if err := validate.Text(p.Param+"description", *p.Description, MaxDescriptionLen, true); err != nil {
			return "", err
		}
	}
	return currency, nil
}

// NewRequest validates p and returns a pending request whose first attempt is due at once
// (payment_request.created). The agreement is checked by the caller (it must exist and be
// active).
func NewRequest(p NewRequestParams) (*Request, error) {
	currency, err := checkParams(p)
	if err != nil {
		return nil, err
	}
	md, err := validate.NewMetadata(p.Param+"metadata", p.Metadata)
	if err != nil {
		return nil, err
	}
	created := p.Created.UTC()
	r := &Request{
		id: p.ID, account: p.Account, livemode: p.Livemode, agreement: p.Agreement,
		amount: *p.Amount, currency: currency, metadata: md, created: created.Truncate(time.Second),
		status: StatusPending, nextAttempt: 1, dueAt: created,
	}
	if p.Description != nil {
		r.description = *p.Description
	}
	r.Raise(eventtype.PaymentRequestCreated)
	return r, nil
}

// errNotCancellable refuses to cancel a request that succeeded or failed (spec §3.3).
func errNotCancellable(s Status) error {
	return domainerr.InvalidState("This payment request has %s and can no longer be cancelled.", s)
}

// Cancel stops the request for reason (StopCancelled by the client, StopAgreementCancelled by
// the agreement's cancellation): payment_request.cancelled. It reports false, changing nothing, for a request cancelled
// already; a request that succeeded or failed refuses (400 invalid_state); a request an
// attempt is charging refuses with ErrAttemptInProgress until the attempt has recorded its
// outcome.
func (r *Request) Cancel(reason StopReason, now time.Time) (bool, error) {
	switch {
	case r.status == StatusCancelled:
		return false, nil
	case !r.status.Open():
		return false, errNotCancellable(r.status)
	case r.claim != nil:
		return false, ErrAttemptInProgress
	}
	r.status = StatusCancelled
	r.stopReason = reason
	r.cancelledAt = now.UTC().Truncate(time.Second)
	r.stop()
	r.Raise(eventtype.PaymentRequestCancelled)
	return true, nil
}

// stop clears the schedule: no attempt will be made.
func (r *Request) stop() {
	r.nextAttempt, r.dueAt, r.nextRetryAt, r.claim = 0, time.Time{}, time.Time{}, nil
}

// Why an attempt task does not run.
var (
	// ErrAttemptObsolete: the request is closed or has moved past this attempt (a duplicate or
	// late task); the task is done.
	ErrAttemptObsolete = domainerr.New(domainerr.Conflict, "attempt_obsolete", "", "The attempt is no longer scheduled.")
	// ErrAttemptNotDue: the attempt is scheduled for later (a task that ran early).
	ErrAttemptNotDue = domainerr.New(domainerr.Conflict, "attempt_not_due", "", "The attempt is not due yet.")
)

// ClaimAttempt marks attempt n as charging, under token, if it is the attempt due and no other
// run of it holds a fresh claim (younger than ttl). It reports whether the request was
// pending: the collection starts now, and it raises payment_request.processing. While claimed
// the request is processing with no next_retry_at.
func (r *Request) ClaimAttempt(n int, token string, now time.Time, ttl time.Duration) (started bool, err error) {
	if !r.status.Open() || r.nextAttempt != n {
		return false, ErrAttemptObsolete
	}
	if r.dueAt.After(now) {
		return false, ErrAttemptNotDue
	}
	if r.claim != nil && r.claim.Token != token && now.Sub(r.claim.At) < ttl {
		return false, ErrAttemptInProgress
	}
	started = r.status == StatusPending
	r.status = StatusProcessing
	r.nextRetryAt = time.Time{}
	r.claim = &Claim{Attempt: n, Token: token, At: now.UTC()}
	if started {
		r.Raise(eventtype.PaymentRequestProcessing)
	}
	return started, nil
}

// Outcome is what an attempt's record did to the request, for the event it raises.
type Outcome int

// Outcomes of Record.
const (
	OutcomeSucceeded Outcome = iota + 1
	OutcomeRetrying
	OutcomeFailed
)

// outcomeEvent is the event type of each outcome of an attempt.
var outcomeEvent = map[Outcome]string{
	OutcomeSucceeded: eventtype.PaymentRequestSucceeded,
	OutcomeRetrying:  eventtype.PaymentRequestRetrying,
	OutcomeFailed:    eventtype.PaymentRequestFailed,
}

// ChargeEvent is the event type of a charge's outcome: charge.succeeded or charge.failed. Its
// object is the charge (the event's part is the Try).
func ChargeEvent(t Try) string {
	if t.Succeeded {
		return eventtype.ChargeSucceeded
	}
	return eventtype.ChargeFailed
}

// OutcomeOf is the outcome of the attempt recorded last on r: succeeded or failed once closed
// by it, retrying while open.
func OutcomeOf(r *Request) Outcome {
	switch r.status {
	case StatusSucceeded:
		return OutcomeSucceeded
	case StatusFailed:
		return OutcomeFailed
	default:
		return OutcomeRetrying
	}
}

// Record stores what attempt n (claimed under token) did: the methods it tried, in order. A
// success closes the request as succeeded; a failure schedules the next attempt, or fails the
// request when the attempts are used up or the agreement has no method left to charge
// (usableLeft). No tries at all means there was no method to charge. It raises each charge's
// event (ChargeEvent), in order, then the request's of the outcome (payment_request.succeeded,
// .retrying or .failed), so none is raised for a charge whose record is lost. A record whose
// claim was taken over returns ErrAttemptObsolete and changes nothing (the other run records
// the same outcome).
func (r *Request) Record(n int, token string, tries []Try, usableLeft bool) (Outcome, error) {
	if r.claim == nil || r.claim.Attempt != n || r.claim.Token != token || !r.status.Open() {
		return 0, ErrAttemptObsolete
	}
	out := r.record(n, tries, usableLeft)
	for _, t := range tries {
		r.RaisePart(ChargeEvent(t), t)
	}
	r.Raise(outcomeEvent[out])
	return out, nil
}

// record applies the outcome of attempt n, whose claim is the run's.
func (r *Request) record(n int, tries []Try, usableLeft bool) Outcome {
	r.claim = nil
	if len(tries) == 0 {
		r.status, r.failureReason, r.stopReason = StatusFailed, FailureNoUsableMethod, StopNoUsableMethod
		r.stop()
		return OutcomeFailed
	}
	r.tries = append(r.tries, tries...)
	r.attempts = n
	last := tries[len(tries)-1]
	switch {
	case last.Succeeded:
		r.status, r.methodUsed, r.stopReason = StatusSucceeded, last.Method, StopSucceeded
		r.stop()
		return OutcomeSucceeded
	case n >= MaxAttempts || !usableLeft:
		r.status, r.failureReason = StatusFailed, last.FailureCode
		r.stopReason = StopAttemptsExhausted
		if n < MaxAttempts {
			r.stopReason = StopNoUsableMethod
		}
		r.stop()
		return OutcomeFailed
	}
	// The next attempt is due the delay after this one's last failure.
	r.nextAttempt = n + 1
	r.dueAt = last.At.UTC().Add(RetryDelay(n)).Truncate(time.Second)
	r.nextRetryAt = r.dueAt
	return OutcomeRetrying
}

// errNothingScheduled refuses to advance a request with no retry waiting.
var errNothingScheduled = domainerr.InvalidState("This payment request has no scheduled attempt to advance: only a request waiting for a retry (next_retry_at set) can be advanced.")

// Advance makes the scheduled retry due now (the test helper), exactly as if next_retry_at had
// arrived. It returns the attempt now due.
func (r *Request) Advance(now time.Time) (int, error) {
	if r.status != StatusProcessing || r.nextRetryAt.IsZero() || r.claim != nil {
		return 0, errNothingScheduled
	}
	r.dueAt = now.UTC()
	r.nextRetryAt = r.dueAt
	return r.nextAttempt, nil
}

// Scheduled returns the attempt the engine must run next and when, or 0 when none will be.
func (r *Request) Scheduled() (attempt int, due time.Time) { return r.nextAttempt, r.dueAt }

// Accessors.
func (r *Request) ID() string                  { return r.id }
func (r *Request) Account() string             { return r.account }
func (r *Request) Livemode() bool              { return r.livemode }
func (r *Request) Agreement() string           { return r.agreement }
func (r *Request) Amount() int64               { return r.amount }
func (r *Request) Currency() string            { return r.currency }
func (r *Request) Description() string         { return r.description }
func (r *Request) Metadata() map[string]string { return maps.Clone(r.metadata) }
func (r *Request) Created() time.Time          { return r.created }
func (r *Request) Status() Status              { return r.status }
func (r *Request) MethodUsed() string          { return r.methodUsed }
func (r *Request) FailureReason() string       { return r.failureReason }
func (r *Request) Attempts() int               { return r.attempts }
func (r *Request) NextRetryAt() time.Time      { return r.nextRetryAt }
func (r *Request) StopReason() StopReason      { return r.stopReason }
func (r *Request) Tries() []Try                { return slices.Clone(r.tries) }
func (r *Request) CancelledAt() time.Time      { return r.cancelledAt }
func (r *Request) Claimed() bool               { return r.claim != nil }

// ClaimedAt is when the attempt charging the request claimed it (zero when none is).
func (r *Request) ClaimedAt() time.Time {
	if r.claim == nil {
		return time.Time{}
	}
	return r.claim.At
}

// Owned reports whether the request belongs to the account in the mode.
func (r *Request) Owned(account string, livemode bool) bool {
	return r.account == account && r.livemode == livemode
}

// RequestState is every field of a request, for the repository.
type RequestState struct {
	ID, Account   string
	Livemode      bool
	Agreement     string
	Amount        int64
	Currency      string
	Description   string
	Metadata      map[string]string
	Created       time.Time
	Status        Status
	MethodUsed    string
	FailureReason string
	Attempts      int
	NextRetryAt   time.Time
	StopReason    StopReason
	Tries         []Try
	CancelledAt   time.Time
	NextAttempt   int
	DueAt         time.Time
	Claim         *Claim
}

// State returns the request's fields.
func (r *Request) State() RequestState {
	s := RequestState{
		ID: r.id, Account: r.account, Livemode: r.livemode, Agreement: r.agreement, Amount: r.amount,
		Currency: r.currency, Description: r.description, Metadata: maps.Clone(r.metadata), Created: r.created,
		Status: r.status, MethodUsed: r.methodUsed, FailureReason: r.failureReason, Attempts: r.attempts,
		NextRetryAt: r.nextRetryAt, StopReason: r.stopReason, Tries: slices.Clone(r.tries),
		CancelledAt: r.cancelledAt, NextAttempt: r.nextAttempt, DueAt: r.dueAt,
	}
	if r.claim != nil {
		c := *r.claim
		s.Claim = &c
	}
	return s
}

// RehydrateRequest rebuilds a stored request; it is not a constructor and checks nothing. A
// charge stored without an id (recorded before charges had ids) gets its derived one
// (ChargeID), so every read shows the same id, and the next write stores it.
func RehydrateRequest(s RequestState) *Request {
	tries := slices.Clone(s.Tries)
	for i, t := range tries {
		if t.ID == "" {
			tries[i].ID = ChargeID(s.ID, t.Attempt, t.Method)
		}
	}
	return &Request{
		id: s.ID, account: s.Account, livemode: s.Livemode, agreement: s.Agreement, amount: s.Amount,
		currency: s.Currency, description: s.Description, metadata: s.Metadata, created: s.Created.UTC(),
		status: s.Status, methodUsed: s.MethodUsed, failureReason: s.FailureReason, attempts: s.Attempts,
		nextRetryAt: s.NextRetryAt.UTC(), stopReason: s.StopReason, tries: tries, cancelledAt: s.CancelledAt.UTC(),
		nextAttempt: s.NextAttempt, dueAt: s.DueAt.UTC(), claim: s.Claim,
	}
}
