package domain

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func newTestDelivery() *Delivery {
	return NewDelivery(NewDeliveryParams{ID: "wd_1", Event: "evt_1", Endpoint: "we_1", Account: "acct_1", EventCreated: t0, Created: t0})
}

func fail(status int) Result { return Result{At: t0, Duration: time.Second, Status: status} }

func TestDeliveryRetriesThenSucceeds(t *testing.T) {
	s := Schedule{time.Minute, time.Hour}
	d := newTestDelivery()
	if !d.Due(1) || d.Due(2) || d.Status() != DeliveryPending || !d.NextAttemptAt().Equal(t0) {
		t.Fatalf("new delivery: %+v", d.State())
	}
	if o, err := d.Record(1, fail(500), s, 0.5); o != Retrying || err != nil {
		t.Fatalf("first failure: %v %v", o, err)
	}
	// The next attempt is task 2, a minute after the failed attempt ended.
	if d.Due(1) || !d.Due(2) || !d.NextAttemptAt().Equal(t0.Add(time.Second+time.Minute)) {
		t.Fatalf("after a failure: %+v", d.State())
	}
	if _, err := d.Record(3, fail(500), s, 0.5); !errors.Is(err, ErrStale) {
		t.Fatalf("recording an attempt never scheduled: %v", err)
	}
	if o, _ := d.Record(2, Result{At: t0, ErrorCode: AttemptConnectionRefused}, s, 0.5); o != Retrying {
		t.Fatalf("second failure: %v", o)
	}
	if o, _ := d.Record(3, fail(204), s, 0.5); o != Succeeded || d.Status() != DeliverySucceeded || !d.NextAttemptAt().IsZero() {
		t.Fatalf("success: %v %+v", o, d.State())
	}
	if n := len(d.Attempts()); n != 3 {
		t.Fatalf("%d attempts recorded", n)
	}
}

func TestDeliveryFailsWhenTheScheduleRunsOut(t *testing.T) {
	s := Schedule{time.Minute}
	d := newTestDelivery()
	d.Record(1, fail(500), s, 0.5)
	if o, _ := d.Record(2, fail(302), s, 0.5); o != Failed || d.Status() != DeliveryFailed || d.Due(3) {
		t.Fatalf("after the last retry: %v %+v", o, d.State())
	}
}

func TestDeliveryGone(t *testing.T) {
	d := newTestDelivery()
	if o, _ := d.Record(1, fail(410), Schedule{time.Minute}, 0.5); o != Gone || d.Status() != DeliveryFailed {
		t.Fatalf("410: %v %+v", o, d.State())
	}
}

func TestDeliveryRetryAfter(t *testing.T) {
	s := Schedule{time.Minute, time.Hour}
	after := 7 * time.Second
	for status, want := range map[int]time.Duration{429: 7 * time.Second, 503: 7 * time.Second, 500: time.Minute} {
		d := newTestDelivery()
		r := fail(status)
		r.RetryAfter = &after
		d.Record(1, r, s, 0.5)
		if got := d.NextAttemptAt().Sub(t0.Add(time.Second)); got != want {
			t.Errorf("status %d with Retry-After 7s: next in %v, want %v", status, got, want)
		}
	}
}

func TestDeliveryParkAndResume(t *testing.T) {
	d := newTestDelivery()
	if d.Park(2) {
		t.Fatal("parked by a stale task")
	}
	if !d.Park(1) || d.Due(1) || d.Status() != DeliveryPending || !d.NextAttemptAt().IsZero() {
		t.Fatalf("parked: %+v", d.State())
	}
	later := t0.Add(time.Hour)
	if !d.Resume(later) || !d.Due(2) || !d.NextAttemptAt().Equal(later) {
		t.Fatalf("resumed: %+v", d.State())
	}
	d.Record(2, fail(200), nil, 0)
	if d.Resume(later) {
		t.Fatal("resumed a delivery that had ended")
	}
}

func TestDeliveryRetryByHand(t *testing.T) {
	s := Schedule{time.Minute, time.Hour}
	now := t0.Add(10 * time.Minute)

	// Pending: the next attempt runs now instead, and the schedule carries on after it.
	d := newTestDelivery()
	d.Record(1, fail(500), s, 0.5)
	d.Retry(now)
	if d.Due(2) || !d.Due(3) || !d.NextAttemptAt().Equal(now) {
		t.Fatalf("retry of a pending delivery: %+v", d.State())
	}
	if o, _ := d.Record(3, fail(500), s, 0.5); o != Retrying {
		t.Fatalf("a failed early attempt should keep the schedule: %v", o)
	}

	// Ended: one more attempt, which ends it again whatever its outcome.
	for _, tc := range []struct {
		status int
		want   DeliveryStatus
	}{{500, DeliveryFailed}, {200, DeliverySucceeded}} {
		d := newTestDelivery()
		d.Record(1, fail(410), s, 0.5)
		d.Retry(now)
		if d.Status() != DeliveryPending || !d.Due(2) {
			t.Fatalf("retry of an ended delivery: %+v", d.State())
		}
		d.Record(2, fail(tc.status), s, 0.5)
		if d.Status() != tc.want || !d.NextAttemptAt().IsZero() {
			t.Fatalf("one-off attempt %d: %+v", tc.status, d.State())
		}
	}
}

func TestDeliveryAbandon(t *testing.T) {
	d := newTestDelivery()
	if !d.Abandon() || d.Status() != DeliveryFailed || d.Abandon() {
		t.Fatalf("abandon: %+v", d.State())
	}
}

func TestDeliveryKeepsTheLatestAttempts(t *testing.T) {
	d := newTestDelivery()
	for i := range MaxAttemptsKept + 5 {
		d.Retry(t0)
		d.Record(d.Seq(), Result{At: t0.Add(time.Duration(i) * time.Second), Status: 500}, nil, 0)
	}
	a := d.Attempts()
	if len(a) != MaxAttemptsKept || !a[len(a)-1].At.Equal(t0.Add(time.Duration(MaxAttemptsKept+4)*time.Second)) {
		t.Fatalf("%d attempts kept, last at %v", len(a), a[len(a)-1].At)
	}
}

func TestDeliverySupersededAttempts(t *testing.T) {
	s := Schedule{time.Minute, time.Hour}
	now := t0.Add(time.Minute)

	// Retried by hand while attempt 1 was in flight: its failure is recorded and the retry
	// stays in charge.
	d := newTestDelivery()
	d.Retry(now)
	if o, err := d.Record(1, fail(500), s, 0.5); o != Superseded || err != nil || !d.Due(2) || len(d.Attempts()) != 1 {
		t.Fatalf("superseded failure: %v %v %+v", o, err, d.State())
	}
	// Its success, though, means the event was delivered.
	d = newTestDelivery()
	d.Retry(now)
	if o, _ := d.Record(1, fail(200), s, 0.5); o != Succeeded || d.Status() != DeliverySucceeded || d.Due(2) {
		t.Fatalf("superseded success: %v %+v", o, d.State())
	}
	// A second run of a task already recorded adds its attempt and changes nothing else.
	d = newTestDelivery()
	d.Record(1, fail(200), s, 0.5)
	if o, _ := d.Record(1, fail(500), s, 0.5); o != Superseded || d.Status() != DeliverySucceeded || len(d.Attempts()) != 2 {
		t.Fatalf("second run: %v %+v", o, d.State())
	}
}
