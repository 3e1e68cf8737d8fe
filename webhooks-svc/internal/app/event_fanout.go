package app

import (
	"context"
	"errors"
	"sync"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Inline first attempts (Config.InlineWait).
//
// A delivery that succeeds at once used to cost the store two writes (its insert as pending at
// the fan-out, then its rewrite with the attempt) and the queue one task. The fan-out of a new
// event now makes the first attempts itself, all at once, waits up to InlineWait for the
// answers, and stores every delivery once, as it then stands: succeeded, or failed with its
// retry queued, or still pending.
//
// The fan-out's own task is not done until the deliveries are stored, so nothing is lost: if
// the process dies before that, the event is fanned out again (the attempts made are made
// again, with the same webhook-id, as at-least-once allows). A first attempt still unanswered
// after InlineWait is stored as pending and due, and recorded when its answer comes; should the
// process die first, the overdue sweep queues the attempt again (RescheduleOverdue), as for a
// lost task. Deliveries appear in the lists once stored: at most InlineWait after the fan-out.
// An endpoint that is not enabled in the delivery path's snapshot, or more first attempts in
// flight than InlineConcurrency (or than an eighth of it to one endpoint), get the queued path.

// firstAttempt is one delivery's first attempt made by a fan-out.
type firstAttempt struct {
	d   *domain.Delivery
	ep  *domain.Endpoint
	res chan domain.Result // the answer, from the goroutine that sent the request
	// late tells that goroutine, once the deliveries are stored, whether the fan-out left the
	// answer to it to record (true) or has recorded it or failed (false).
	late chan bool

	answered bool           // the answer came within InlineWait
	result   domain.Result  // the answer, when answered
	outcome  domain.Outcome // set when the answer is recorded on d
	recorded bool
}

// await takes the answer if it has come, or waits for it until deadline is closed, and
// reports whether it came. An answer already there always counts, deadline or not.
func (f *firstAttempt) await(deadline <-chan struct{}) bool {
	select {
	case f.result = <-f.res:
		return true
	default:
	}
	select {
	case f.result = <-f.res:
		return true
	case <-deadline:
		return false
	}
}

// fanOutInline makes the first attempt of each fresh delivery of ev, stores the deliveries, and
// has their states take effect. ds are new, due, and not stored yet.
func (s *Service) fanOutInline(ctx context.Context, ev events.Event, ds []*domain.Delivery) error {
	if len(ds) == 0 {
		return nil // stored fanned out (NewEventRecord): no write to make
	}
	var flights []*firstAttempt
	for _, d := range ds {
		if f := s.startFirstAttempt(ctx, ev, d); f != nil {
			flights = append(flights, f)
		}
	}

	inFlight := s.awaitFirstAttempts(ctx, flights)
	created, err := s.Deliveries.CreateAll(ctx, ds)
	for _, f := range flights {
		if !f.answered {
			f.late <- err == nil
		}
	}
	if err != nil {
		return err // the fan-out runs again, attempts included
	}
	// What settle does for one delivery, for all of them: queue what is due, then tell the
	// event that its deliveries are stored and where every one stands, in one write.
	statuses := make(map[string]domain.DeliveryStatus, len(ds))
	for i, d := range ds {
		if !created[i] {
			// Stored by someone else meanwhile (another consumer of the same event): theirs
			// stands; make sure it has had its effects.
			stored, err := s.Deliveries.Load(ctx, d.ID())
			if err != nil {
				return err
			}
			d = stored
		} else if inFlight[d.ID()] {
			continue // recorded when its answer comes
		}
		if err := s.ensureScheduled(ctx, d); err != nil {
			return err
		}
		statuses[d.ID()] = d.Status()
	}
	err = s.Events.SetFannedOut(ctx, ev.ID, statuses)
	if err != nil && !errors.Is(err, domain.ErrEventNotFound) {
		return err
	}
	for _, f := range flights {
		if f.recorded {
			if err := s.noteOutcome(ctx, f.ep, f.outcome, f.result); err != nil {
				return err
			}
		}
	}
	return nil
}

// awaitFirstAttempts waits for the first attempts' answers, up to InlineWait from now for all
// of them together, and records each answer on its delivery (before it is stored). It returns
// the deliveries whose attempt is still in flight: each is told once the store is done.
func (s *Service) awaitFirstAttempts(ctx context.Context, flights []*firstAttempt) (inFlight map[string]bool) {
	wait, cancel := context.WithTimeout(ctx, s.cfg.InlineWait)
	defer cancel()
	inFlight = map[string]bool{}
	for _, f := range flights {
		if f.answered = f.await(wait.Done()); !f.answered {
			inFlight[f.d.ID()] = true
			continue
		}
		f.late <- false
		o, err := f.d.Record(1, f.result, s.cfg.Schedule, s.rnd())
		if err != nil {
			// Cannot happen for a fresh delivery's first attempt; leave it to the queue.
			s.Log.ErrorContext(ctx, "recording a first attempt", "delivery", f.d.ID(), "error", err.Error())
			continue
		}
		f.outcome, f.recorded = o, true
	}
	return inFlight
}

// startFirstAttempt sends d's first attempt in the background and returns it, or returns nil
// when d is to take the queued path (endpoint not enabled in the snapshot, or too many first
// attempts in flight).
func (s *Service) startFirstAttempt(ctx context.Context, ev events.Event, d *domain.Delivery) *firstAttempt {
	ep, ok := domain.DestinationEndpoint(ev)
	if !d.ToDestination() {
		var err error
		if ep, err = s.Endpoints.Cached(ctx, d.Endpoint(), d.Account(), d.Livemode()); err != nil {
			return nil
		}
		ok = ep.Status() == domain.StatusEnabled
	}
	if !ok {
		return nil
	}
	// An event's own destination has no id: its URL is what one slow receiver would hold.
	key := ep.ID()
	if ep.IsDestination() {
		key = ep.URL()
	}
	if !s.inline.acquire(key) {
		return nil
	}
	req, err := s.request(ep, ev)
	if err != nil {
		s.inline.release(key)
		return nil
	}
	f := &firstAttempt{d: d, ep: ep, res: make(chan domain.Result, 1), late: make(chan bool, 1)}
	// The request outlives the fan-out's task when it is late: it keeps the trace, not the
	// cancellation. The sender bounds it (WEBHOOKS_TIMEOUT).
	bg := context.WithoutCancel(ctx)
	go func() {
		res := s.Sender.Send(bg, req)
		s.inline.release(key)
		s.logFailure(bg, d, ev, 1, res)
		f.res <- res
		if <-f.late {
			if err := s.record(bg, d.ID(), 1, ep, res); err != nil {
				s.Log.WarnContext(bg, "recording a late first attempt; the overdue sweep will queue it again",
					"delivery", d.ID(), "error", err.Error())
			}
		}
	}()
	return f
}

// inflight counts the first attempts made by fan-outs, in all and per endpoint. The bound per
// endpoint keeps one slow or unreachable receiver (which holds its attempts up to
// WEBHOOKS_TIMEOUT) from taking every slot, so the others keep the inline path, and once it is
// at its bound its deliveries are queued at once instead of holding fan-outs for InlineWait.
type inflight struct {
	mu          sync.Mutex
	total, max  int
	perEndpoint map[string]int
	maxEndpoint int
}

func newInflight(limit int) *inflight {
	limit = max(limit, 1)
	return &inflight{max: limit, maxEndpoint: max(limit/8, 1), perEndpoint: map[string]int{}}
}

func (f *inflight) acquire(endpoint string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.total >= f.max || f.perEndpoint[endpoint] >= f.maxEndpoint {
		return false
	}
	f.total++
	f.perEndpoint[endpoint]++
	return true
}

func (f *inflight) release(endpoint string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if f.perEndpoint[endpoint]--; f.perEndpoint[endpoint] <= 0 {
		delete(f.perEndpoint, endpoint)
	}
}
