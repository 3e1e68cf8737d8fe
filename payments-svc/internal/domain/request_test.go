package domain

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
)

const ttl = 90 * time.Second

func validRequest() NewRequestParams {
	return NewRequestParams{ID: "preq_1", Account: "acct_1", Created: created, Agreement: "pa_1",
		Amount: ptr(int64(12500)), Currency: ptr("EUR"), Description: ptr("November rent")}
}

func newRequest(t *testing.T) *Request {
	t.Helper()
	r, err := NewRequest(validRequest())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRequestValidation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		prefix      string
		change      func(*NewRequestParams)
		code, param string
	}{
		{"no amount", "", func(p *NewRequestParams) { p.Amount = nil }, "parameter_missing", "amount"},
		{"zero amount", "", func(p *NewRequestParams) { p.Amount = ptr(int64(0)) }, "parameter_invalid", "amount"},
		{"negative amount", "", func(p *NewRequestParams) { p.Amount = ptr(int64(-5)) }, "parameter_invalid", "amount"},
		{"huge amount", "", func(p *NewRequestParams) { p.Amount = ptr(int64(MaxAmount + 1)) }, "parameter_invalid", "amount"},
		{"no currency", "", func(p *NewRequestParams) { p.Currency = nil }, "parameter_missing", "currency"},
		{"bad currency", "", func(p *NewRequestParams) { p.Currency = ptr("eu") }, "parameter_invalid", "currency"},
		{"unknown currency", "requests[3].", func(p *NewRequestParams) { p.Currency = ptr("xyz") }, "parameter_invalid", "requests[3].currency"},
		{"long description", "", func(p *NewRequestParams) { p.Description = ptr(strings.Repeat("é", MaxDescriptionLen+1)) }, "parameter_invalid", "description"},
		{"control character", "", func(p *NewRequestParams) { p.Description = ptr("rent\x00") }, "parameter_invalid", "description"},
		{"escape in bulk", "requests[2].", func(p *NewRequestParams) { p.Description = ptr("rent\x1b[2J") }, "parameter_invalid", "requests[2].description"},
		{"invalid UTF-8", "", func(p *NewRequestParams) { p.Description = ptr("rent \xc3") }, "parameter_invalid", "description"},
		{"bad metadata in bulk", "requests[0].", func(p *NewRequestParams) { p.Metadata = map[string]string{"": "x"} }, "parameter_invalid", "requests[0].metadata"},
		{"bad amount in bulk", "requests[12].", func(p *NewRequestParams) { p.Amount = ptr(int64(0)) }, "parameter_invalid", "requests[12].amount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validRequest()
			p.Param = tc.prefix
			tc.change(&p)
			_, err := NewRequest(p)
			e := domainerr.As(err)
			if e == nil || e.Code != tc.code || e.Param != tc.param {
				t.Fatalf("NewRequest = %v; want %s naming %s", err, tc.code, tc.param)
			}
		})
	}
}

// A description is multi-line: tabs and line breaks are kept as sent.
func TestNewRequestDescriptionIsMultiLine(t *testing.T) {
	p := validRequest()
	p.Description = ptr("March rent\r\n\tflat 2")
	r, err := NewRequest(p)
	if err != nil || r.Description() != *p.Description {
		t.Fatalf("NewRequest = %v; want the description kept", err)
	}
}

func TestNewRequestIsPendingWithAttemptOneDueNow(t *testing.T) {
	r := newRequest(t)
	n, due := r.Scheduled()
	if r.Status() != StatusPending || r.Attempts() != 0 || r.Currency() != "eur" || n != 1 || !due.Equal(created) ||
		!r.NextRetryAt().IsZero() || r.MethodUsed() != "" || r.FailureReason() != "" || r.StopReason() != "" {
		t.Fatalf("new request %+v", r.State())
	}
	if got := types(r); got != "[payment_request.created]" {
		t.Fatalf("a new request raised %s", got)
	}
}

func try(n int, method string, ok bool, code string, at time.Time) Try {
	return Try{Attempt: n, Method: method, Succeeded: ok, FailureCode: code, At: at}
}

// The schedule, attempt by attempt, with a fake clock: attempt 2 is due 24 h after attempt 1's
// last failure, attempt 3 72 h after attempt 2's, and attempt 3's failure fails the request.
func TestScheduleOfFailedAttempts(t *testing.T) {
	r := newRequest(t)
	now := created.Add(300 * time.Millisecond)
	for n := 1; n <= MaxAttempts; n++ {
		started, err := r.ClaimAttempt(n, "tok", now, ttl)
		if err != nil || started != (n == 1) {
			t.Fatalf("claim %d: started %v, %v", n, started, err)
		}
		if r.Status() != StatusProcessing || !r.NextRetryAt().IsZero() || !r.Claimed() {
			t.Fatalf("claimed %d: %+v", n, r.State())
		}
		failedAt := now.Add(2 * time.Second)
		out, err := r.Record(n, "tok", []Try{try(n, "pm_a", false, "insufficient_funds", now.Add(time.Second)),
			try(n, "pm_b", false, "insufficient_funds", failedAt)}, true)
		if err != nil {
			t.Fatal(err)
		}
		if r.Attempts() != n || len(r.Tries()) != 2*n || r.Claimed() {
			t.Fatalf("after attempt %d: %+v", n, r.State())
		}
		// The request's events: processing when the first attempt starts; then, for each
		// attempt, one event per charge, in order, before the attempt's outcome.
		wantEvents := "[payment_request.created payment_request.processing"
		for i := 1; i <= n; i++ {
			outcome := " payment_request.retrying"
			if i == MaxAttempts {
				outcome = " payment_request.failed"
			}
			wantEvents += " charge.failed charge.failed" + outcome
		}
		if got := types(r); got != wantEvents+"]" {
			t.Fatalf("after attempt %d the request raised %s; want %s]", n, got, wantEvents)
		}
		if n == MaxAttempts {
			if out != OutcomeFailed || r.Status() != StatusFailed || r.FailureReason() != "insufficient_funds" ||
				r.StopReason() != StopAttemptsExhausted || !r.NextRetryAt().IsZero() {
				t.Fatalf("after the last attempt: %v %+v", out, r.State())
			}
			if next, _ := r.Scheduled(); next != 0 {
				t.Fatalf("a closed request still schedules attempt %d", next)
			}
			break
		}
		want := failedAt.Add(RetryDelay(n)).Truncate(time.Second)
		next, due := r.Scheduled()
		if out != OutcomeRetrying || next != n+1 || !due.Equal(want) || !r.NextRetryAt().Equal(want) || r.Status() != StatusProcessing {
			t.Fatalf("after attempt %d: %v next %d due %v; want %v", n, out, next, due, want)
		}
		if _, err := r.ClaimAttempt(n+1, "tok", due.Add(-time.Second), ttl); !errors.Is(err, ErrAttemptNotDue) {
			t.Fatalf("claim before due: %v", err)
		}
		now = due
	}
	if RetryDelay(1) != 24*time.Hour || RetryDelay(2) != 72*time.Hour {
		t.Fatal("the spec's schedule is +24 h, then +72 h")
	}
}

func TestRecordOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tries      []Try
		usableLeft bool
		outcome    Outcome
		status     Status
		stop       StopReason
		failure    string
		used       string
		events     string // what the record raised
	}{
		{"first method succeeds", []Try{try(1, "pm_a", true, "", created)}, true, OutcomeSucceeded, StatusSucceeded, StopSucceeded, "", "pm_a",
			"[charge.succeeded payment_request.succeeded]"},
		{"fallback succeeds", []Try{try(1, "pm_a", false, "declined", created), try(1, "pm_b", true, "", created)}, true, OutcomeSucceeded, StatusSucceeded, StopSucceeded, "", "pm_b",
			"[charge.failed charge.succeeded payment_request.succeeded]"},
		{"all fail, retry", []Try{try(1, "pm_a", false, "insufficient_funds", created)}, true, OutcomeRetrying, StatusProcessing, "", "", "",
			"[charge.failed payment_request.retrying]"},
		{"the only method hard-declined", []Try{try(1, "pm_a", false, "declined", created)}, false, OutcomeFailed, StatusFailed, StopNoUsableMethod, "declined", "",
			"[charge.failed payment_request.failed]"},
		{"nothing to charge", nil, false, OutcomeFailed, StatusFailed, StopNoUsableMethod, FailureNoUsableMethod, "", "[payment_request.failed]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRequest(t)
			if _, err := r.ClaimAttempt(1, "tok", created, ttl); err != nil {
				t.Fatal(err)
			}
			before := len(r.Raised())
			out, err := r.Record(1, "tok", tc.tries, tc.usableLeft)
			if err != nil || out != tc.outcome || r.Status() != tc.status || r.StopReason() != tc.stop ||
				r.FailureReason() != tc.failure || r.MethodUsed() != tc.used {
				t.Fatalf("Record = %v, %v; request %+v", out, err, r.State())
			}
			// Each charge's event is about the charge (its part), the outcome's about the request.
			rec := r.Raised()[before:]
			var got []string
			for i, ev := range rec {
				got = append(got, ev.Type)
				if part, _ := ev.Part.(Try); ev.Update || (i < len(tc.tries)) != (ev.Part != nil) || (ev.Part != nil && part != tc.tries[i]) {
					t.Errorf("event %d %+v", i, ev)
				}
			}
			if fmt.Sprint(got) != tc.events {
				t.Fatalf("Record raised %v; want %s", got, tc.events)
			}
		})
	}
}

func TestClaims(t *testing.T) {
	r := newRequest(t)
	if _, err := r.ClaimAttempt(2, "a", created, ttl); !errors.Is(err, ErrAttemptObsolete) {
		t.Fatalf("claim of an attempt not scheduled: %v", err)
	}
	if _, err := r.ClaimAttempt(1, "a", created, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ClaimAttempt(1, "b", created.Add(ttl-time.Second), ttl); !errors.Is(err, ErrAttemptInProgress) {
		t.Fatalf("a second run while the claim is fresh: %v", err)
	}
	// The first run died: once its claim is stale the next run takes it over, and the first
	// run's record, should it come back, is refused.
	if _, err := r.ClaimAttempt(1, "b", created.Add(ttl), ttl); err != nil {
		t.Fatalf("take-over of a stale claim: %v", err)
	}
	raisedBefore := len(r.Raised())
	if _, err := r.Record(1, "a", []Try{try(1, "pm_a", true, "", created)}, true); !errors.Is(err, ErrAttemptObsolete) || len(r.Raised()) != raisedBefore {
		t.Fatalf("record under a lost claim: %v", err)
	}
	if out, err := r.Record(1, "b", []Try{try(1, "pm_a", true, "", created)}, true); err != nil || out != OutcomeSucceeded {
		t.Fatalf("record of the run holding the claim: %v %v", out, err)
	}
	if _, err := r.ClaimAttempt(1, "c", created.Add(time.Hour), ttl); !errors.Is(err, ErrAttemptObsolete) {
		t.Fatalf("claim of a closed request: %v", err)
	}
}

func TestCancel(t *testing.T) {
	at := created.Add(time.Minute)
	pending := func(t *testing.T) *Request { return newRequest(t) }
	claimed := func(t *testing.T) *Request {
		r := newRequest(t)
		if _, err := r.ClaimAttempt(1, "tok", created, ttl); err != nil {
			t.Fatal(err)
		}
		return r
	}
	recorded := func(tries []Try, usable bool) func(t *testing.T) *Request {
		return func(t *testing.T) *Request {
			r := claimed(t)
			if _, err := r.Record(1, "tok", tries, usable); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	waiting := recorded([]Try{try(1, "pm_a", false, "insufficient_funds", created)}, true)
	succeeded := recorded([]Try{try(1, "pm_a", true, "", created)}, true)
	failed := recorded(nil, false)
	for _, tc := range []struct {
		name    string
		request func(*testing.T) *Request
		changed bool
		err     error
	}{
		{"pending", pending, true, nil},
		{"processing, waiting for a retry", waiting, true, nil},
		{"processing, an attempt charging", claimed, false, ErrAttemptInProgress},
		{"succeeded", succeeded, false, domainerr.New(domainerr.Invalid, domainerr.CodeInvalidState, "", "")},
		{"failed", failed, false, domainerr.New(domainerr.Invalid, domainerr.CodeInvalidState, "", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.request(t)
			before, raisedBefore := r.State(), len(r.Raised())
			changed, err := r.Cancel(StopCancelled, at)
			if changed != tc.changed || (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("Cancel = %v, %v; want %v, %v", changed, err, tc.changed, tc.err)
			}
			if !changed {
				if r.State().Status != before.Status || len(r.Raised()) != raisedBefore {
					t.Fatal("a refused cancel changed the request")
				}
				return
			}
			if len(r.Raised()) != raisedBefore+1 || lastType(r) != "payment_request.cancelled" {
				t.Fatalf("a cancel raised %s", types(r))
			}
			n, _ := r.Scheduled()
			if r.Status() != StatusCancelled || r.StopReason() != StopCancelled || !r.CancelledAt().Equal(at) || n != 0 || !r.NextRetryAt().IsZero() {
				t.Fatalf("cancelled: %+v", r.State())
			}
			n0 := len(r.Raised())
			if again, err := r.Cancel(StopAgreementCancelled, at.Add(time.Hour)); again || err != nil || r.StopReason() != StopCancelled || len(r.Raised()) != n0 {
				t.Fatalf("second cancel = %v, %v, reason %s; want unchanged", again, err, r.StopReason())
			}
		})
	}
}

func TestAdvance(t *testing.T) {
	r := newRequest(t)
	if _, err := r.Advance(created); domainerr.CodeOf(err) != domainerr.CodeInvalidState {
		t.Fatalf("advance of a pending request: %v", err)
	}
	if _, err := r.ClaimAttempt(1, "tok", created, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Advance(created); domainerr.CodeOf(err) != domainerr.CodeInvalidState {
		t.Fatalf("advance while an attempt charges: %v", err)
	}
	if _, err := r.Record(1, "tok", []Try{try(1, "pm_a", false, "insufficient_funds", created)}, true); err != nil {
		t.Fatal(err)
	}
	now := created.Add(time.Hour)
	n, err := r.Advance(now)
	if next, due := r.Scheduled(); err != nil || n != 2 || next != 2 || !due.Equal(now) || !r.NextRetryAt().Equal(now) {
		t.Fatalf("Advance = %d, %v; scheduled %d at %v", n, err, next, due)
	}
	if _, err := r.ClaimAttempt(2, "tok2", now, ttl); err != nil {
		t.Fatalf("the advanced attempt is due: %v", err)
	}
}

func TestRehydrateRequestKeepsEveryField(t *testing.T) {
	r := newRequest(t)
	if _, err := r.ClaimAttempt(1, "tok", created, ttl); err != nil {
		t.Fatal(err)
	}
	s := RehydrateRequest(r.State()).State()
	if s.Claim == nil || s.Claim.Token != "tok" || s.Status != StatusProcessing || s.NextAttempt != 1 || s.Amount != 12500 {
		t.Fatalf("rehydrated %+v", s)
	}
}

// types lists the types of the events r raised, in order.
func types(r *Request) string {
	var out []string
	for _, ev := range r.Raised() {
		out = append(out, ev.Type)
	}
	return fmt.Sprint(out)
}

func lastType(r *Request) string {
	evs := r.Raised()
	if len(evs) == 0 {
		return ""
	}
	return evs[len(evs)-1].Type
}
