package app

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Inline first attempts (Config.InlineConcurrency).
//
// A request's first attempt is due the moment the request is stored. Queued as a task, it cost
// three asynq scripts in Redis and three round trips (the enqueue by the create, the dequeue
// and the done of the worker), a fifth of payments-svc's CPU in a profile of the payments
// bench (dequeue 8 %, done 8 %, the enqueue 5 %), and the create answered only after the
// enqueue. So the create hands its first attempts to runners of this process:
// InlineConcurrency of them take the attempts in order from a backlog of InlineBacklog, and an
// attempt that finds the backlog full (or the runners stopped) is queued as before. Only first
// attempts: a retry is due a day or more later, and the queue holds it until then. In a burst
// of bulk creates the backlog fills and most first attempts are still queued.
//
// Nothing is lost with them. The request is stored before its attempt is handed over, so an
// attempt that never runs (the process dies with it in the backlog, or half-way) leaves the
// request open and overdue: the reconciler queues it once it is ReconcileGrace overdue, as it
// does an attempt whose task Redis lost; a charge made before the death is made again under the
// same idempotency key, which the processor answers without charging twice. An attempt that
// must run again (its store or processor did not answer, another run holds it, it panicked) is
// queued, and the queue's retries take it from there. At shutdown, the attempts not started are
// queued, and those still running when the shutdown's time is up are cut short and queue
// themselves.
//
// An inline attempt runs in the create's trace, as a span of its own (inlineSpan) under the
// create's, started when a runner takes it; a queued one starts a trace of its own linked to it.

// inlineSpan names the span of a first attempt run inline (a queued one's is its task's,
// "process payment_request:attempt").
const inlineSpan = "run payment_request:attempt"

// inlineAttempt is a first attempt handed to the runners.
type inlineAttempt struct {
	ctx     context.Context // the create's trace, nothing else of it (Deps.Detach)
	request string
	due     time.Time
}

// inlineRunners are the runners of first attempts and their backlog.
type inlineRunners struct {
	backlog chan inlineAttempt
	stop    chan struct{}
	running sync.WaitGroup
	// cut ends the attempts still running when the stop's deadline has passed (cutRunning), so
	// they fail and queue themselves while the queue's connections are open, as asynq does
	// with its handlers at its shutdown timeout.
	cut        context.Context
	cutRunning context.CancelFunc

	mu sync.Mutex // orders the sends to backlog before the close of stop, and so its drain
}

// stopped reports whether stop is closed.
func (r *inlineRunners) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// StartInline starts the runners of first attempts (Config.InlineConcurrency of them) and
// returns what stops them: the attempts running finish (until ctx ends), and those not started
// are queued. Without a call, or with InlineConcurrency 0, every first attempt is queued.
func (s *Service) StartInline() (stop func(ctx context.Context) error) {
	if s.cfg.InlineConcurrency <= 0 {
		return func(context.Context) error { return nil }
	}
	r := &inlineRunners{backlog: make(chan inlineAttempt, max(s.cfg.InlineBacklog, 0)), stop: make(chan struct{})}
	r.cut, r.cutRunning = context.WithCancel(context.Background())
	for range s.cfg.InlineConcurrency {
		r.running.Go(func() { s.runInline(r) })
	}
	s.inline.Store(r)
	return func(ctx context.Context) error { return s.stopInline(ctx, r) }
}

// runInline is one runner: it runs the backlog's attempts until the runners stop.
func (s *Service) runInline(r *inlineRunners) {
	for {
		// A stop wins over a waiting attempt: what is left is queued by stopInline.
		if r.stopped() {
			return
		}
		select {
		case <-r.stop:
			return
		case a := <-r.backlog:
			s.runFirstAttempt(r.cut, a)
		}
	}
}

// handInline gives a first attempt to the runners, and reports whether they took it (false:
// not started, stopped, or the backlog is full).
func (s *Service) handInline(ctx context.Context, request string, due time.Time) bool {
	r := s.inline.Load()
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped() {
		return false
	}
	select {
	case r.backlog <- inlineAttempt{ctx: s.Detach(ctx), request: request, due: due}:
		return true
	default:
		return false
	}
}

// runFirstAttempt runs a first attempt handed inline, until cut ends at the latest; one that
// must run again is queued, and so is one that panicked on the runner (asynq recovers its
// handlers' panics: so do the runners, or one request would take the process down with its
// backlog; a panic in the store's hold, which runs the charges on the document's writer, is
// beyond either).
func (s *Service) runFirstAttempt(cut context.Context, a inlineAttempt) {
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	defer context.AfterFunc(cut, cancel)()
	if s.cfg.AttemptTimeout > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, s.cfg.AttemptTimeout)
		defer cancelTimeout()
	}
	ctx, end := s.StartSpan(ctx, inlineSpan, "payment_request.id", a.request, "payment_request.attempt", "1")
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
				s.Log.ErrorContext(a.ctx, "collection attempt panicked", "payment_request", a.request,
					"attempt", 1, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		return s.RunAttempt(ctx, a.request, 1)
	}()
	end(err)
	if err == nil {
		return
	}
	at := s.Now()
	if ra := (*RetryAt)(nil); errors.As(err, &ra) {
		at = ra.At
	} else {
		s.Log.WarnContext(a.ctx, "collection attempt failed; it is queued to run again",
			"payment_request", a.request, "attempt", 1, "error", err.Error())
	}
	s.queueFirstAttempt(a.ctx, a.request, at)
}

// queueFirstAttempt queues a request's first attempt for at, and reports whether it could;
// should that fail, the request is stored and open, and the reconciler queues it once it is
// overdue.
func (s *Service) queueFirstAttempt(ctx context.Context, request string, at time.Time) bool {
	if _, err := s.Scheduler.Schedule(ctx, request, 1, at); err != nil {
		s.Log.WarnContext(ctx, "queueing the first attempt failed; the reconciler will",
			"payment_request", request, "error", err.Error())
		return false
	}
	return true
}

// cutGrace is how long the stop waits, once it has cut the attempts still running, for them to
// queue themselves.
const cutGrace = 2 * time.Second

// stopInline stops the runners: no attempt is taken any more, the backlog's are queued, and
// the running ones finish; those still running when ctx ends are cut short and queue
// themselves (their charges are made again under the same idempotency keys).
func (s *Service) stopInline(ctx context.Context, r *inlineRunners) error {
	r.mu.Lock()
	if r.stopped() {
		r.mu.Unlock()
		return nil
	}
	close(r.stop)
	r.mu.Unlock()

	// First the backlog, while ctx is young: no send can come any more (stopped), so the
	// backlog is what it holds now, less what a runner still takes meanwhile (and runs).
	queued, failed := 0, 0
	for drained := false; !drained; {
		select {
		case a := <-r.backlog:
			if s.queueFirstAttempt(ctx, a.request, a.due) {
				queued++
			} else {
				failed++
			}
		default:
			drained = true
		}
	}
	if queued+failed > 0 {
		s.Log.InfoContext(ctx, "queued the first attempts not started at shutdown", "attempts", queued, "not_queued", failed)
	}

	finished := make(chan struct{})
	go func() { r.running.Wait(); close(finished) }()
	var errs []error
	if failed > 0 {
		errs = append(errs, fmt.Errorf("%d first attempts not started could not be queued; the reconciler will", failed))
	}
	select {
	case <-finished:
	case <-ctx.Done():
		r.cutRunning()
		errs = append(errs, fmt.Errorf("first attempts still running at shutdown were cut short: %w", ctx.Err()))
		select {
		case <-finished:
		case <-time.After(cutGrace):
			// Their requests stay open: the reconciler queues them once overdue.
		}
	}
	r.cutRunning()
	return errors.Join(errs...)
}
