package domain

import (
	"errors"
	"slices"
	"time"
)

// DeliveryIDPrefix starts every delivery id.
const DeliveryIDPrefix = "wd_"

// MaxAttemptsKept bounds the attempts a delivery remembers; the oldest are dropped first.
const MaxAttemptsKept = 100

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
)

// DeliveryStatuses lists every status, in the order a delivery meets them.
var DeliveryStatuses = []DeliveryStatus{DeliveryPending, DeliverySucceeded, DeliveryFailed}

// ErrStale is returned when an attempt is recorded that the delivery never scheduled.
var ErrStale = errors.New("delivery attempt is stale")

// Outcome is what an attempt meant for the delivery.
type Outcome int

// Outcomes of Record.
const (
	// Succeeded: a 2xx; the delivery is done.
	Succeeded Outcome = iota + 1
	// Retrying: a failure with retries left; the next attempt is scheduled.
	Retrying
	// Failed: a failure with none left; the delivery is done.
	Failed
	// Gone: the receiver answered 410: the delivery failed and the endpoint is to be disabled.
	Gone
	// Superseded: the attempt was made, but meanwhile the delivery was rescheduled (retried by
	// hand, its endpoint re-enabled) or another run of the same task recorded it first. It is
	// recorded; a success ends a pending delivery, anything else leaves the newer schedule in
	// charge.
	Superseded
)

// Delivery is one event on its way to one endpoint, with every attempt made.
//
// Attempts are run by tasks numbered with seq: only the task whose number is the delivery's
// seq, while the delivery is pending with a next attempt time, may attempt it. Rescheduling
// (a retry by hand, re-enabling the endpoint, the retry after a failure) moves seq on, so a
// task left over from an earlier schedule does nothing when it runs.
type Delivery struct {
	id           string
	event        string
	endpoint     string
	account      string
	livemode     bool
	eventCreated time.Time
	created      time.Time

	status   DeliveryStatus
	attempts []Attempt
	seq      int
	next     time.Time // zero: no attempt scheduled
	failures int       // failed attempts counted against the schedule
	// oneOff: pending only for a retry by hand of a delivery that had ended; that attempt
	// ends it again, whatever its outcome, without automatic retries.
	oneOff bool
}

// NewDeliveryParams is a new delivery.
type NewDeliveryParams struct {
	ID, Event, Endpoint, Account string
	Livemode                     bool
	EventCreated, Created        time.Time
}

// NewDelivery returns a pending delivery whose first attempt is due at once.
func NewDelivery(p NewDeliveryParams) *Delivery {
	return &Delivery{
		id: p.ID, event: p.Event, endpoint: p.Endpoint, account: p.Account, livemode: p.Livemode,
		eventCreated: p.EventCreated.UTC(), created: p.Created.UTC(),
		status: DeliveryPending, seq: 1, next: p.Created.UTC(),
	}
}

// Due reports whether the attempt task numbered attempt may run now.
func (d *Delivery) Due(attempt int) bool {
	return d.status == DeliveryPending && d.seq == attempt && !d.next.IsZero()
}

// Record stores the result of attempt and moves the delivery on: done on a 2xx, done and
// failed on 410 or when no retry is left, otherwise pending with the next attempt scheduled
// (from the schedule, or the receiver's Retry-After on 429 and 503). rnd in [0, 1) jitters the
// delay. An attempt the delivery no longer awaits is Superseded; one it never scheduled is
// refused with ErrStale, changing nothing.
func (d *Delivery) Record(attempt int, r Result, s Schedule, rnd float64) (Outcome, error) {
	if attempt < 1 || attempt > d.seq {
		return 0, ErrStale
	}
	d.attempts = append(d.attempts, r.Attempt())
	if n := len(d.attempts); n > MaxAttemptsKept {
		d.attempts = slices.Clone(d.attempts[n-MaxAttemptsKept:])
	}
	success := r.Succeeded()
	if !d.Due(attempt) {
		if success && d.status == DeliveryPending {
			d.finish(DeliverySucceeded)
			return Succeeded, nil
		}
		return Superseded, nil
	}
	end := r.At.Add(r.Duration)
	switch {
	case success:
		d.finish(DeliverySucceeded)
		return Succeeded, nil
	case r.Status == 410:
		d.finish(DeliveryFailed)
		return Gone, nil
	case d.oneOff:
		d.finish(DeliveryFailed)
		return Failed, nil
	}
	d.failures++
	var retryAfter *time.Duration
	if r.Status == 429 || r.Status == 503 {
		retryAfter = r.RetryAfter
	}
	delay, ok := s.Next(d.failures, retryAfter, rnd)
	if !ok {
		d.finish(DeliveryFailed)
		return Failed, nil
	}
	d.seq++
	d.next = end.Add(delay).UTC()
	return Retrying, nil
}

func (d *Delivery) finish(s DeliveryStatus) {
	d.status = s
	d.next = time.Time{}
	d.oneOff = false
}

// Park leaves a pending delivery without a next attempt (its endpoint is disabled); Resume
// schedules it again. It reports whether anything changed.
func (d *Delivery) Park(attempt int) bool {
	if !d.Due(attempt) {
		return false
	}
	d.next = time.Time{}
	return true
}

// Resume schedules a pending delivery's next attempt now (its endpoint was enabled again). It
// reports whether the delivery is pending, and so has a new attempt to run.
func (d *Delivery) Resume(now time.Time) bool {
	if d.status != DeliveryPending {
		return false
	}
	d.seq++
	d.next = now.UTC()
	return true
}

// Retry schedules a new attempt now, whatever the status. A pending delivery runs its next
// attempt early and goes on with its schedule; one that had ended becomes pending for this one
// attempt, which ends it again.
func (d *Delivery) Retry(now time.Time) {
	if d.status != DeliveryPending {
		d.status = DeliveryPending
		d.oneOff = true
	}
	d.seq++
	d.next = now.UTC()
}

// Abandon fails a pending delivery that can never be made (its endpoint or event is gone). It
// reports whether anything changed.
func (d *Delivery) Abandon() bool {
	if d.status != DeliveryPending {
		return false
	}
	d.finish(DeliveryFailed)
	return true
}

// Accessors.

func (d *Delivery) ID() string               { return d.id }
func (d *Delivery) Event() string            { return d.event }
func (d *Delivery) Endpoint() string         { return d.endpoint }
func (d *Delivery) Account() string          { return d.account }
func (d *Delivery) Livemode() bool           { return d.livemode }
func (d *Delivery) EventCreated() time.Time  { return d.eventCreated }
func (d *Delivery) Created() time.Time       { return d.created }
func (d *Delivery) Status() DeliveryStatus   { return d.status }
func (d *Delivery) Attempts() []Attempt      { return slices.Clone(d.attempts) }
func (d *Delivery) Seq() int                 { return d.seq }
func (d *Delivery) NextAttemptAt() time.Time { return d.next }

// OwnedBy reports whether the delivery belongs to account in the given mode.
func (d *Delivery) OwnedBy(account string, livemode bool) bool {
	return d.account == account && d.livemode == livemode
}

// DeliveryState is a delivery's stored form, for repositories.
type DeliveryState struct {
	ID, Event, Endpoint, Account string
	Livemode                     bool
	EventCreated, Created        time.Time
	Status                       DeliveryStatus
	Attempts                     []Attempt
	Seq                          int
	NextAttemptAt                time.Time
	Failures                     int
	OneOff                       bool
}

// RehydrateDelivery rebuilds a delivery from storage.
func RehydrateDelivery(s DeliveryState) *Delivery {
	attempts := make([]Attempt, len(s.Attempts))
	for i, a := range s.Attempts {
		attempts[i] = a.rehydrated()
	}
	return &Delivery{
		id: s.ID, event: s.Event, endpoint: s.Endpoint, account: s.Account, livemode: s.Livemode,
		eventCreated: s.EventCreated.UTC(), created: s.Created.UTC(),
		status: s.Status, attempts: attempts, seq: s.Seq, next: s.NextAttemptAt.UTC(),
		failures: s.Failures, oneOff: s.OneOff,
	}
}

// State returns the delivery's stored form.
func (d *Delivery) State() DeliveryState {
	return DeliveryState{
		ID: d.id, Event: d.event, Endpoint: d.endpoint, Account: d.account, Livemode: d.livemode,
		EventCreated: d.eventCreated, Created: d.created,
		Status: d.status, Attempts: slices.Clone(d.attempts), Seq: d.seq, NextAttemptAt: d.next,
		Failures: d.failures, OneOff: d.oneOff,
	}
}
