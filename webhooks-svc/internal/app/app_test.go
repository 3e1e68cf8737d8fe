package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
)

// The use cases on the real repositories (embedded store), with the scheduler, sender and
// publisher faked so each step is driven by hand.

type fakeScheduler struct {
	mu    sync.Mutex
	tasks map[string]time.Time // "<delivery>:<attempt>" → when
}

func (f *fakeScheduler) Schedule(_ context.Context, delivery string, attempt int, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := delivery + ":" + strconv.Itoa(attempt)
	if _, dup := f.tasks[key]; !dup {
		f.tasks[key] = at
	}
	return nil
}

func (f *fakeScheduler) count() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.tasks) }

type fakeSender struct {
	mu     sync.Mutex
	status int
	sent   []app.Request
	hold   chan struct{} // when set, every send waits for it to be closed
}

func (f *fakeSender) Send(_ context.Context, r app.Request) domain.Result {
	f.mu.Lock()
	f.sent = append(f.sent, r)
	status, hold := f.status, f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return domain.Result{At: r.Timestamp, Duration: time.Millisecond, Status: status}
}

func (f *fakeSender) sends() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.sent) }

// crashingDeliveries fails at the n-th delivery created, as a crash half-way through a fan-out
// would: the ones before it are stored, the rest are not.
type crashingDeliveries struct {
	domain.DeliveryRepository
	mu      sync.Mutex
	creates int
	failAt  int
}

func (c *crashingDeliveries) Create(ctx context.Context, d *domain.Delivery) (bool, error) {
	c.mu.Lock()
	c.creates++
	n := c.creates
	c.mu.Unlock()
	if n == c.failAt {
		return false, errors.New("crash")
	}
	return c.DeliveryRepository.Create(ctx, d)
}

func (c *crashingDeliveries) CreateAll(ctx context.Context, ds []*domain.Delivery) ([]bool, error) {
	out := make([]bool, len(ds))
	for i, d := range ds {
		created, err := c.Create(ctx, d)
		if err != nil {
			return nil, err
		}
		out[i] = created
	}
	return out, nil
}

type env struct {
	svc    *app.Service
	sched  *fakeScheduler
	sender *fakeSender
	queue  *outboxtest.Queue
	relay  *outbox.Relay
	events *mongo.Events
	delivs *crashingDeliveries
	gen    *ids.Generator
	caller app.Caller
}

func newEnv(t *testing.T) *env { t.Helper(); return newEnvWith(t, nil) }

// newEnvWith is newEnv with the configuration changed by configure.
func newEnvWith(t *testing.T, configure func(*app.Config)) *env {
	t.Helper()
	db := servicetest.Store(t)
	queue := &outboxtest.Queue{}
	e := &env{
		sched:  &fakeScheduler{tasks: map[string]time.Time{}},
		sender: &fakeSender{status: 200},
		queue:  queue,
		relay:  outboxtest.NewRelay(queue),
		events: mongo.NewEvents(db),
		delivs: &crashingDeliveries{DeliveryRepository: mongo.NewDeliveries(db)},
		gen:    ids.NewGenerator(nil),
	}
	e.caller = app.Caller{Account: e.gen.New(ids.Account), RequestID: "req_1", IdempotencyKey: "key-1"}
	cfg := app.Config{
		Schedule: domain.Schedule{time.Minute}, AutoDisableAfter: time.Hour, Retention: time.Hour, AllowPrivate: true,
	}
	if configure != nil {
		configure(&cfg)
	}
	emitter := &events.Emitter[*domain.Endpoint]{IDs: e.gen, Now: time.Now, Object: func(e *domain.Endpoint) any {
		return map[string]any{"id": e.ID(), "object": "webhook_endpoint", "status": e.Status(), "description": e.Description()}
	}}
	e.svc = app.New(app.Deps{
		Endpoints: mongo.NewRepository(db, e.relay, emitter, time.Minute), Events: e.events, Deliveries: e.delivs,
		Scheduler: e.sched, Sender: e.sender,
		IDs: e.gen,
	}, cfg)
	return e
}

func (e *env) endpoint(t *testing.T, events ...string) *domain.Endpoint {
	t.Helper()
	ep, err := e.svc.Create(t.Context(), e.caller, app.CreateEndpoint{URL: "https://example.invalid/h", EnabledEvents: events})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func (e *env) event(t *testing.T, typ string) events.Event {
	t.Helper()
	ev, err := eventstest.New(e.gen, time.Now(), eventstest.Change{Type: typ, Account: e.caller.Account, Object: map[string]string{"id": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestIngestCompletesAfterACrashAndNeverDoubles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.endpoint(t, "*")
	e.endpoint(t, "payment_request.failed")
	e.endpoint(t, "payment_request.created") // not subscribed
	ev := e.event(t, "payment_request.failed")
	e.delivs.failAt = 2
	if err := e.svc.Ingest(t.Context(), ev); err == nil {
		t.Fatal("the crash went unnoticed")
	}
	for range 2 { // the redelivery, and one more for good measure
		if err := e.svc.Ingest(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := e.events.Load(t.Context(), ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Targets) != 2 || rec.PendingWebhooks() != 2 {
		t.Fatalf("targets %+v", rec.Targets)
	}
	for _, tg := range rec.Targets {
		d, err := e.delivs.Load(t.Context(), tg.Delivery)
		if err != nil || d.Endpoint() != tg.Endpoint || !d.Due(1) {
			t.Fatalf("delivery %s: %v %v", tg.Delivery, d, err)
		}
	}
	if n := e.sched.count(); n != 2 {
		t.Fatalf("%d attempt tasks scheduled, want 2", n)
	}
}

func TestDeliverRunsEachAttemptOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t, "payment_request.failed")
	ev := e.event(t, "payment_request.failed")
	if err := e.svc.Ingest(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	rec, _ := e.events.Load(t.Context(), ev.ID)
	id := rec.Targets[0].Delivery
	ctx := t.Context()
	if err := e.svc.Deliver(ctx, id, 2); err != nil || len(e.sender.sent) != 0 {
		t.Fatalf("a task for an attempt not scheduled sent something: %v", err)
	}
	e.sender.status = 500
	if err := e.svc.Deliver(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Deliver(ctx, id, 1); err != nil || len(e.sender.sent) != 1 {
		t.Fatalf("attempt 1 ran twice (%d sends)", len(e.sender.sent))
	}
	r := e.sender.sent[0]
	var body map[string]any
	_ = json.Unmarshal(r.Body, &body)
	if r.MessageID != ev.ID || r.URL != ep.URL() || len(r.Secrets) != 1 || body["id"] != ev.ID || body["pending_webhooks"] != float64(1) {
		t.Fatalf("request %+v body %s", r, r.Body)
	}
	if _, ok := e.sched.tasks[id+":2"]; !ok {
		t.Fatal("the retry was not scheduled")
	}
	e.sender.status = 200
	if err := e.svc.Deliver(ctx, id, 2); err != nil {
		t.Fatal(err)
	}
	rec, _ = e.events.Load(ctx, ev.ID)
	if rec.PendingWebhooks() != 0 || !rec.DeliverySuccess() {
		t.Fatalf("event after success: %+v", rec.Targets)
	}
}

func TestDeletingAnEndpointFailsItsPendingDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t, "*")
	ev := e.event(t, "payment_request.failed")
	if err := e.svc.Ingest(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(t.Context(), e.caller, ep.ID()); err != nil {
		t.Fatal(err)
	}
	rec, _ := e.events.Load(t.Context(), ev.ID)
	if rec.PendingWebhooks() != 0 || rec.FailedWebhooks() != 1 {
		t.Fatalf("event after the endpoint was deleted: %+v", rec.Targets)
	}
	if err := e.svc.Deliver(t.Context(), rec.Targets[0].Delivery, 1); err != nil || len(e.sender.sent) != 0 {
		t.Fatalf("delivered to a deleted endpoint: %v", err)
	}
}

func TestEndpointEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t, "*")
	empty := ""
	if _, err := e.svc.Update(t.Context(), e.caller, ep.ID(), domain.Changes{Description: &empty}); err != nil {
		t.Fatal(err)
	}
	desc := "new"
	if _, err := e.svc.Update(t.Context(), e.caller, ep.ID(), domain.Changes{Description: &desc}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(t.Context(), e.caller, ep.ID()); err != nil {
		t.Fatal(err)
	}
	e.relay.Wait()
	published := e.queue.Events()
	var types []string
	for _, ev := range published {
		types = append(types, ev.Type)
		if *ev.Request.ID != "req_1" || *ev.Request.IdempotencyKey != "key-1" || ev.Account != e.caller.Account {
			t.Fatalf("event %+v", ev)
		}
	}
	if want := []string{"webhook_endpoint.created", "webhook_endpoint.updated", "webhook_endpoint.deleted"}; len(types) != 3 ||
		types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Fatalf("events %v, want %v (an update that changes nothing raises none)", types, want)
	}
	if prev := string(published[1].Data.PreviousAttributes); prev != `{"description":""}` {
		t.Fatalf("previous_attributes %s", prev)
	}
}

// The platform disables an endpoint (410 Gone, or every delivery failing for the auto-disable
// period) as its own work: webhook_endpoint.disabled carries the previous status alone and
// names no request.
func TestEndpointDisabledEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		status   int
		attempts int
	}{
		{"gone", 410, 1},
		{"failing", 500, 2}, // the first failure starts the streak, the second ends the period
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, func(c *app.Config) { c.AutoDisableAfter = time.Nanosecond })
			e.sender.status = tc.status
			ep := e.endpoint(t, "payment_request.failed")
			ev := e.event(t, "payment_request.failed")
			if err := e.svc.Ingest(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			rec, _ := e.events.Load(t.Context(), ev.ID)
			for n := 1; n <= tc.attempts; n++ {
				if err := e.svc.Deliver(t.Context(), rec.Targets[0].Delivery, n); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := e.svc.Get(t.Context(), e.caller, ep.ID()); err != nil || got.Status() != domain.StatusDisabled {
				t.Fatalf("endpoint after %d failed attempts: %v, %v", tc.attempts, got, err)
			}
			e.relay.Wait()
			published := e.queue.Events()
			if len(published) != 2 || published[0].Type != "webhook_endpoint.created" || published[1].Type != "webhook_endpoint.disabled" {
				t.Fatalf("published %+v", published)
			}
			disabled := published[1]
			if prev := string(disabled.Data.PreviousAttributes); prev != `{"status":"enabled"}` {
				t.Fatalf("previous_attributes %s", prev)
			}
			if disabled.Request.ID != nil || disabled.Request.IdempotencyKey != nil {
				t.Fatalf("a background event names request %+v", disabled.Request)
			}
			var object map[string]any
			if err := json.Unmarshal(disabled.Data.Object, &object); err != nil || object["status"] != "disabled" || object["id"] != ep.ID() {
				t.Fatalf("object %s: %v", disabled.Data.Object, err)
			}
		})
	}
}

func TestPurgeExpired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.endpoint(t, "*")
	old, err := eventstest.New(e.gen, time.Now().Add(-2*time.Hour), eventstest.Change{Type: "payment_request.failed", Account: e.caller.Account, Object: map[string]string{"id": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	recent := e.event(t, "payment_request.failed")
	for _, ev := range []events.Event{old, recent} {
		if err := e.svc.Ingest(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := e.events.Load(t.Context(), old.ID)
	evs, dels, err := e.svc.PurgeExpired(t.Context()) // retention: 1h
	if err != nil || evs != 1 || dels != 1 {
		t.Fatalf("PurgeExpired = %d events, %d deliveries, %v", evs, dels, err)
	}
	if _, err := e.events.Load(t.Context(), old.ID); !errors.Is(err, domain.ErrEventNotFound) {
		t.Fatalf("old event: %v", err)
	}
	if _, err := e.delivs.Load(t.Context(), rec.Targets[0].Delivery); !errors.Is(err, domain.ErrDeliveryNotFound) {
		t.Fatalf("old event's delivery: %v", err)
	}
	if _, err := e.events.Load(t.Context(), recent.ID); err != nil {
		t.Fatalf("recent event: %v", err)
	}
	// Its leftover attempt task finds nothing and sends nothing.
	if err := e.svc.Deliver(t.Context(), rec.Targets[0].Delivery, 1); err != nil || len(e.sender.sent) != 0 {
		t.Fatalf("Deliver of a purged delivery: %v", err)
	}
}

// With inline first attempts, a fan-out stores each delivery once, as its first attempt left it,
// and queues only what is left to do: the retry of a failure.
func TestInlineFirstAttempts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		want      domain.DeliveryStatus
		wantTasks int
	}{
		{200, domain.DeliverySucceeded, 0},
		{500, domain.DeliveryPending, 1}, // attempt 2, scheduled
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, func(c *app.Config) { c.InlineWait, c.InlineConcurrency = time.Second, 10 })
			e.sender.status = tc.status
			e.endpoint(t, "*")
			ev := e.event(t, "payment_request.failed")
			if err := e.svc.Ingest(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			rec, err := e.events.Load(t.Context(), ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.delivs.Load(t.Context(), rec.Targets[0].Delivery)
			if err != nil {
				t.Fatal(err)
			}
			if d.Status() != tc.want || len(d.Attempts()) != 1 || d.Attempts()[0].Status != tc.status {
				t.Fatalf("delivery after the fan-out: %+v", d.State())
			}
			if e.sender.sends() != 1 || e.sched.count() != tc.wantTasks {
				t.Fatalf("%d sends, %d tasks; want 1 and %d", e.sender.sends(), e.sched.count(), tc.wantTasks)
			}
			if tc.wantTasks == 1 {
				if _, ok := e.sched.tasks[d.ID()+":2"]; !ok {
					t.Fatalf("tasks %v: the retry is not attempt 2", e.sched.tasks)
				}
			}
			if succeeded := rec.PendingWebhooks() == 0 && rec.DeliverySuccess(); succeeded != (tc.status == 200) {
				t.Fatalf("event after the fan-out: %+v", rec.Targets)
			}
			// A redelivered fan-out (its task ran again) neither sends nor queues anything.
			if err := e.svc.Ingest(t.Context(), ev); err != nil || e.sender.sends() != 1 || e.sched.count() != tc.wantTasks {
				t.Fatalf("second fan-out: %v, %d sends, %d tasks", err, e.sender.sends(), e.sched.count())
			}
		})
	}
}

// A first attempt that has not answered within InlineWait is stored pending, without a task,
// and recorded when the answer comes.
func TestInlineFirstAttemptAnsweredLate(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *app.Config) { c.InlineWait, c.InlineConcurrency = 20*time.Millisecond, 10 })
	e.sender.hold = make(chan struct{})
	e.endpoint(t, "*")
	ev := e.event(t, "payment_request.failed")
	if err := e.svc.Ingest(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	rec, _ := e.events.Load(t.Context(), ev.ID)
	id := rec.Targets[0].Delivery
	d, err := e.delivs.Load(t.Context(), id)
	if err != nil || d.Status() != domain.DeliveryPending || len(d.Attempts()) != 0 || e.sched.count() != 0 {
		t.Fatalf("while the attempt is in flight: %+v %v, %d tasks", d, err, e.sched.count())
	}
	close(e.sender.hold)
	// The late answer is recorded on the delivery, then on the event: wait for both.
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err = e.delivs.Load(t.Context(), id)
		rec, _ = e.events.Load(t.Context(), ev.ID)
		if err == nil && d.Status() == domain.DeliverySucceeded && len(d.Attempts()) == 1 && rec.DeliverySuccess() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late answer was not recorded: %+v %v; event %+v", d, err, rec.Targets)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !rec.DeliverySuccess() || e.sender.sends() != 1 || e.sched.count() != 0 {
		t.Fatalf("after the late answer: %+v, %d sends, %d tasks", rec.Targets, e.sender.sends(), e.sched.count())
	}
}

// A fan-out that dies before its deliveries are stored runs again, as a redelivered fan-out:
// every delivery is stored and queued once (its first attempt is made again by the task, as
// at-least-once allows).
func TestInlineFanOutCompletesAfterACrash(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *app.Config) { c.InlineWait, c.InlineConcurrency = time.Second, 10 })
	e.endpoint(t, "*")
	e.endpoint(t, "*")
	ev := e.event(t, "payment_request.failed")
	e.delivs.failAt = 1
	if err := e.svc.Ingest(t.Context(), ev); err == nil {
		t.Fatal("the crash went unnoticed")
	}
	if err := e.svc.Ingest(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	rec, _ := e.events.Load(t.Context(), ev.ID)
	for _, tg := range rec.Targets {
		if d, err := e.delivs.Load(t.Context(), tg.Delivery); err != nil || !d.Due(1) {
			t.Fatalf("delivery %s after the redelivered fan-out: %+v %v", tg.Delivery, d, err)
		}
	}
	if e.sched.count() != 2 || e.sender.sends() != 2 {
		t.Fatalf("%d tasks and %d sends, want 2 of each (the crashed fan-out's attempts)", e.sched.count(), e.sender.sends())
	}
}

// An endpoint with its share of first attempts in flight (an eighth of InlineConcurrency) gets
// its next deliveries queued as tasks: a slow receiver cannot take every slot.
func TestInlineFirstAttemptsBoundedPerEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *app.Config) { c.InlineWait, c.InlineConcurrency = 20*time.Millisecond, 8 })
	e.sender.hold = make(chan struct{})
	e.endpoint(t, "*")
	first, second := e.event(t, "payment_request.failed"), e.event(t, "payment_request.failed")
	for _, ev := range []events.Event{first, second} {
		if err := e.svc.Ingest(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := e.events.Load(t.Context(), second.ID)
	if _, queued := e.sched.tasks[rec.Targets[0].Delivery+":1"]; !queued || e.sched.count() != 1 || e.sender.sends() != 1 {
		t.Fatalf("tasks %v, %d sends: want the second delivery queued, one send in flight", e.sched.tasks, e.sender.sends())
	}
	close(e.sender.hold)
}

// A fan-out that dies half-way with its task lost (Redis lost it, and no publisher publishes the
// event again) leaves the event stored and delivered nowhere: the sweep finishes it, as the
// task's redelivery would have, once the event is older than its grace; an event fanned out
// whole is not touched.
func TestCompleteFanOutsAfterALostTask(t *testing.T) {
	t.Parallel()
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, func(c *app.Config) {
				if inline {
					c.InlineWait, c.InlineConcurrency = time.Second, 10
				}
			})
			e.endpoint(t, "*")
			e.endpoint(t, "payment_request.failed")
			whole := e.event(t, "payment_request.failed")
			if err := e.svc.Ingest(t.Context(), whole); err != nil {
				t.Fatal(err)
			}
			none := e.event(t, "verification_session.created") // one target: fanned out whole too
			if err := e.svc.Ingest(t.Context(), none); err != nil {
				t.Fatal(err)
			}
			lost := e.event(t, "payment_request.failed")
			e.delivs.failAt = e.delivs.creates + 2
			if err := e.svc.Ingest(t.Context(), lost); err == nil {
				t.Fatal("the crash went unnoticed")
			}
			tasks := e.sched.count()

			// Within the grace the fan-out may still be running: left alone.
			if n, err := e.svc.CompleteFanOuts(t.Context(), time.Hour); err != nil || n != 0 {
				t.Fatalf("within the grace: %d completed, %v", n, err)
			}
			// A sweep a minute later (a grace reaching past now).
			n, err := e.svc.CompleteFanOuts(t.Context(), -time.Minute)
			if err != nil || n != 1 {
				t.Fatalf("the sweep completed %d fan-outs (%v), want 1 (the lost one)", n, err)
			}
			rec, err := e.events.Load(t.Context(), lost.ID)
			if err != nil || !rec.FannedOut || len(rec.Targets) != 2 {
				t.Fatalf("after the sweep: %+v %v", rec, err)
			}
			// Inline, the first delivery was stored with its first attempt answered (200)
			// before the crash: the event learns it succeeded, and only the other is queued.
			want := 2
			if inline {
				want = 1
			}
			for _, tg := range rec.Targets {
				d, err := e.delivs.Load(t.Context(), tg.Delivery)
				if err != nil || d.Endpoint() != tg.Endpoint || d.Status() != tg.Status {
					t.Fatalf("delivery %s: %v %v (the event says %s)", tg.Delivery, d, err, tg.Status)
				}
			}
			if e.sched.count() != tasks+want {
				t.Fatalf("%d attempt tasks queued by the sweep, want %d", e.sched.count()-tasks, want)
			}
			if n, err := e.svc.CompleteFanOuts(t.Context(), -time.Minute); err != nil || n != 0 {
				t.Fatalf("a second sweep completed %d (%v), want 0", n, err)
			}
		})
	}
}
