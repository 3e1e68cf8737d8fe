package app_test

import (
	"context"
	"testing"
	"time"

	"rentalplatform/payments-svc/internal/adapters/simulator"
	"rentalplatform/payments-svc/internal/app"
	"rentalplatform/payments-svc/internal/domain"
)

// First attempts run inline (request_inline.go): by the process's runners, without a task,
// and queued when the runners cannot take them, must run again, or are stopped.

func newInlineFixture(t *testing.T, runners, backlog int) (*fixture, func(context.Context) error) {
	t.Helper()
	f := newFixtureWith(t, app.Config{
		ClaimTTL: claimTTL, CancelWait: time.Second, AdvanceWait: time.Second, ReconcileGrace: time.Minute,
		InlineConcurrency: runners, InlineBacklog: backlog, AttemptTimeout: 10 * time.Second,
	})
	stop := f.svc.StartInline()
	t.Cleanup(func() { _ = stop(context.Background()) })
	return f, stop
}

// waitStatus waits until request id has status want.
func (f *fixture) waitStatus(t *testing.T, id string, want domain.Status) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := f.get(t, id).Status()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s is %s, want %s", id, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitQueued waits until attempt n of request id is queued.
func (f *fixture) waitQueued(t *testing.T, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f.sched.has(id, n) {
		if time.Now().After(deadline) {
			t.Fatalf("attempt %d of %s was not queued", n, id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestInlineFirstAttemptRunsWithoutATask(t *testing.T) {
	f, _ := newInlineFixture(t, 2, 10)
	a := f.agreement(t, simulator.TokenSuccess)
	r := f.request(t, a.ID())
	if r.Status() != domain.StatusPending {
		t.Fatalf("the create answered %s, want pending (the attempt runs after it)", r.Status())
	}
	f.waitStatus(t, r.ID(), domain.StatusSucceeded)
	if f.sched.has(r.ID(), 1) {
		t.Error("the first attempt ran inline and was queued as well")
	}
	if n := f.charged(t, r.ID()); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}

	// A declined first attempt schedules its retry as a task, as a queued one does.
	d := f.request(t, f.agreement(t, simulator.TokenSucceedFromAttempt2).ID())
	f.waitQueued(t, d.ID(), 2)
	if got := f.get(t, d.ID()); got.Status() != domain.StatusProcessing {
		t.Errorf("after a declined first attempt the request is %s, want %s", got.Status(), domain.StatusProcessing)
	}
	if f.sched.has(d.ID(), 1) {
		t.Error("the declined first attempt was queued as well")
	}
}

func TestInlineFirstAttemptQueuedWhenItMustRunAgain(t *testing.T) {
	f, _ := newInlineFixture(t, 1, 10)
	a := f.agreement(t, simulator.TokenSuccess)
	f.proc.dieOnce = true // charged, then the answer is lost: the outcome is unknown
	r := f.request(t, a.ID())
	f.waitQueued(t, r.ID(), 1)
	if n := f.charged(t, r.ID()); n != 1 {
		t.Fatalf("charged %d times before the retry, want 1", n)
	}
	// The queued task runs it again once the claim (if the store kept one) is stale; the
	// charge is answered from its idempotency key, not made twice.
	f.clock.add(claimTTL + time.Second)
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, r.ID()); got.Status() != domain.StatusSucceeded {
		t.Errorf("after the queued run the request is %s, want succeeded", got.Status())
	}
	if n := f.charged(t, r.ID()); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
}

func TestInlineBacklogFullAndShutdownQueue(t *testing.T) {
	f, stop := newInlineFixture(t, 1, 1)
	f.proc.entered = make(chan struct{}, 10)
	f.proc.gate = make(chan struct{})
	a := f.agreement(t, simulator.TokenSuccess)

	running := f.request(t, a.ID()) // taken by the one runner, which then waits in the charge
	<-f.proc.entered
	waiting := f.request(t, a.ID()) // in the backlog
	full := f.request(t, a.ID())    // the backlog is full: queued at once
	if !f.sched.has(full.ID(), 1) {
		t.Error("a first attempt that found the backlog full was not queued")
	}
	for _, r := range []*domain.Request{running, waiting} {
		if f.sched.has(r.ID(), 1) {
			t.Errorf("%s was handed to the runners and queued as well", r.ID())
		}
	}

	// Stopping with an attempt still charging: the attempt not started is queued at once (the
	// scheduler refuses a context that has ended, as Redis's client does); at the stop's
	// deadline the running one is cut short, and queues itself, uncharged.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := stop(ctx); err == nil {
		t.Error("the stop reported nothing while an attempt was still running")
	}
	if !f.sched.has(waiting.ID(), 1) {
		t.Error("the attempt left in the backlog at shutdown was not queued")
	}
	f.waitQueued(t, running.ID(), 1)
	if n := f.charged(t, running.ID()); n != 0 {
		t.Errorf("the attempt cut short charged %d times, want 0", n)
	}
	// Its task runs it.
	close(f.proc.gate)
	f.clock.add(claimTTL + time.Second)
	if err := f.svc.RunAttempt(t.Context(), running.ID(), 1); err != nil {
		t.Fatal(err)
	}
	f.waitStatus(t, running.ID(), domain.StatusSucceeded)

	// Stopped: a new create queues its first attempt.
	after := f.request(t, a.ID())
	if !f.sched.has(after.ID(), 1) {
		t.Error("a first attempt after the stop was not queued")
	}
}

func TestInlineFirstAttemptThatPanicsIsQueued(t *testing.T) {
	f, _ := newInlineFixture(t, 1, 10)
	// Declined, so the attempt queues its retry, and that call panics (on the runner).
	d := f.agreement(t, simulator.TokenSucceedFromAttempt2)
	f.sched.mu.Lock()
	f.sched.panicOnce = true
	f.sched.mu.Unlock()
	r := f.request(t, d.ID())
	f.waitQueued(t, r.ID(), 1)
	// The runner survived it: the next request runs inline.
	next := f.request(t, f.agreement(t, simulator.TokenSuccess).ID())
	f.waitStatus(t, next.ID(), domain.StatusSucceeded)
	if f.sched.has(next.ID(), 1) {
		t.Error("after a panic, the next first attempt was queued instead of run")
	}
}
