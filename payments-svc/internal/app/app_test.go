package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/payments-svc/internal/adapters/mongo"
	"rentalplatform/payments-svc/internal/adapters/simulator"
	"rentalplatform/payments-svc/internal/app"
	"rentalplatform/payments-svc/internal/domain"
	httpport "rentalplatform/payments-svc/internal/ports/http"
)

// The use cases on the real repositories and the real simulator (embedded store), with the
// scheduler faked and the clock fake, so each attempt is driven by hand.

type fakeScheduler struct {
	mu        sync.Mutex
	tasks     map[string]time.Time // "<request>:<attempt>" → when
	lost      bool
	panicOnce bool // the next Schedule panics
}

func (f *fakeScheduler) Schedule(ctx context.Context, request string, n int, at time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err // as the Redis client does with a context that has ended
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panicOnce {
		f.panicOnce = false
		panic("scheduler adapter bug")
	}
	key := request + ":" + strconv.Itoa(n)
	if _, dup := f.tasks[key]; dup {
		return false, nil
	}
	f.tasks[key] = at
	return true, nil
}

func (f *fakeScheduler) RunNow(ctx context.Context, request string, n int) error {
	_, err := f.Schedule(ctx, request, n, time.Time{})
	return err
}

func (f *fakeScheduler) Unschedule(_ context.Context, request string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tasks, request+":"+strconv.Itoa(n))
	return nil
}

func (f *fakeScheduler) Lost(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lost := f.lost
	f.lost = false
	return lost, nil
}

// flush forgets every task, as a Redis flush does.
func (f *fakeScheduler) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks, f.lost = map[string]time.Time{}, true
}

func (f *fakeScheduler) has(request string, n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.tasks[request+":"+strconv.Itoa(n)]
	return ok
}

// clock is a fake clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gatedProcessor lets a test hold a charge in flight (gate), or fail it after it was made (as
// a worker that dies between the charge and the record).
type gatedProcessor struct {
	app.Processor
	entered chan struct{} // receives when a charge starts, if set
	gate    chan struct{} // when set, a charge waits for it to be closed
	dieOnce bool          // the next charge is made, then reported as lost
}

func (g *gatedProcessor) Charge(ctx context.Context, c app.Charge) (app.ChargeResult, error) {
	if g.entered != nil {
		g.entered <- struct{}{}
	}
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return app.ChargeResult{}, ctx.Err()
		}
	}
	res, err := g.Processor.Charge(ctx, c)
	if g.dieOnce {
		g.dieOnce = false
		return app.ChargeResult{}, errors.New("worker killed after the charge")
	}
	return res, err
}

type fixture struct {
	svc    *app.Service
	sched  *fakeScheduler
	clock  *clock
	sim    *simulator.Simulator
	proc   *gatedProcessor
	queue  *outboxtest.Queue
	caller app.Caller
}

const claimTTL = 90 * time.Second

func newFixture(t *testing.T, cancelWait time.Duration) *fixture {
	t.Helper()
	return newFixtureWith(t, app.Config{
		ClaimTTL: claimTTL, CancelWait: cancelWait, AdvanceWait: time.Second, ReconcileGrace: time.Minute,
	})
}

// newFixtureWith is newFixture with the engine's policy cfg.
func newFixtureWith(t *testing.T, cfg app.Config) *fixture {
	t.Helper()
	db := servicetest.Store(t)
	q := &outboxtest.Queue{}
	relay := outboxtest.NewRelay(q)
	clk := &clock{now: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)}
	gen := ids.NewGenerator(clk.Now)
	// The events as run.go renders them.
	agreements := mongo.NewAgreements(db, relay, httpport.AgreementEvents(gen, clk.Now))
	requests := mongo.NewRequests(db, relay, httpport.RequestEvents(gen, clk.Now))
	if err := agreements.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := requests.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	sim := simulator.New(db, clk.Now)
	proc := &gatedProcessor{Processor: sim}
	sched := &fakeScheduler{tasks: map[string]time.Time{}}
	svc := app.New(app.Deps{
		Agreements: agreements, Requests: requests, Test: proc, Scheduler: sched,
		Now: clk.Now, IDs: gen,
	}, cfg)
	return &fixture{svc: svc, sched: sched, clock: clk, sim: sim, proc: proc, queue: q,
		caller: identity.Identity{Account: "acct_1", RequestID: "req_1"}}
}

func ptr[T any](v T) *T { return &v }

func (f *fixture) agreement(t *testing.T, tokens ...string) *domain.Agreement {
	t.Helper()
	in := app.CreateAgreement{Tenant: &app.TenantInput{Name: ptr("Ada"), Email: ptr("ada@example.com")}}
	for i, tok := range tokens {
		in.Methods = append(in.Methods, domain.MethodParams{Type: ptr("card"), Token: ptr(tok), Preferred: ptr(i == 0)})
	}
	a, err := f.svc.CreateAgreement(t.Context(), f.caller, in)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *fixture) request(t *testing.T, agreement string) *domain.Request {
	t.Helper()
	r, err := f.svc.CreateRequest(t.Context(), f.caller, app.CreateRequest{Agreement: &agreement, Amount: ptr(int64(100)), Currency: ptr("eur")})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) get(t *testing.T, id string) *domain.Request {
	t.Helper()
	r, err := f.svc.GetRequest(t.Context(), f.caller, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) charged(t *testing.T, id string) int {
	t.Helper()
	n, err := f.sim.Charged(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A cancel that arrives while an attempt charges waits for the attempt's outcome: a success
// wins (the cancel is refused, the request was charged once), a failure lets the cancel through.
func TestCancelDuringACharge(t *testing.T) {
	for _, tc := range []struct {
		token      string
		wantStatus domain.Status
		wantCancel string // "" success, else the error code
	}{
		{simulator.TokenSuccess, domain.StatusSucceeded, domainerr.CodeInvalidState},
		{simulator.TokenInsufficientFunds, domain.StatusCancelled, ""},
	} {
		t.Run(tc.token, func(t *testing.T) {
			f := newFixture(t, 10*time.Second)
			r := f.request(t, f.agreement(t, tc.token).ID())
			f.proc.entered, f.proc.gate = make(chan struct{}, 1), make(chan struct{})
			attempt := make(chan error, 1)
			go func() { attempt <- f.svc.RunAttempt(context.Background(), r.ID(), 1) }()
			<-f.proc.entered
			cancelled := make(chan error, 1)
			go func() {
				_, err := f.svc.CancelRequest(context.Background(), f.caller, r.ID())
				cancelled <- err
			}()
			select {
			case err := <-cancelled:
				t.Fatalf("the cancel returned (%v) while the attempt was charging", err)
			case <-time.After(200 * time.Millisecond):
			}
			close(f.proc.gate)
			if err := <-attempt; err != nil {
				t.Fatal(err)
			}
			err := <-cancelled
			if domainerr.CodeOf(err) != tc.wantCancel {
				t.Fatalf("cancel = %v; want code %q", err, tc.wantCancel)
			}
			got := f.get(t, r.ID())
			if got.Status() != tc.wantStatus || f.charged(t, r.ID()) != 1 {
				t.Fatalf("request %s, charged %d times; want %s, once", got.Status(), f.charged(t, r.ID()), tc.wantStatus)
			}
			if tc.wantStatus == domain.StatusCancelled && f.sched.has(r.ID(), 2) {
				t.Fatal("the cancelled request's retry is still scheduled")
			}
		})
	}
}

// A cancel does not wait longer than its budget: 409 attempt_in_progress, nothing changed.
func TestCancelGivesUpOnALongCharge(t *testing.T) {
	f := newFixture(t, 50*time.Millisecond)
	r := f.request(t, f.agreement(t, simulator.TokenSuccess).ID())
	f.proc.entered, f.proc.gate = make(chan struct{}, 1), make(chan struct{})
	attempt := make(chan error, 1)
	go func() { attempt <- f.svc.RunAttempt(context.Background(), r.ID(), 1) }()
	<-f.proc.entered
	_, err := f.svc.CancelRequest(t.Context(), f.caller, r.ID())
	if domainerr.CodeOf(err) != domain.CodeAttemptInProgress || domainerr.KindOf(err) != domainerr.Conflict {
		t.Fatalf("cancel = %v; want 409 attempt_in_progress", err)
	}
	close(f.proc.gate)
	if err := <-attempt; err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, r.ID()); got.Status() != domain.StatusSucceeded {
		t.Fatalf("status %s", got.Status())
	}
}

// Many cancels racing many runs of the same attempt: one charge at most, and never both charged
// and cancelled.
func TestConcurrentCancelsAndAttempts(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	a := f.agreement(t, simulator.TokenSuccess)
	for range 5 {
		r := f.request(t, a.ID())
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _ = f.svc.RunAttempt(context.Background(), r.ID(), 1) })
			wg.Go(func() { _, _ = f.svc.CancelRequest(context.Background(), f.caller, r.ID()) })
		}
		wg.Wait()
		got, n := f.get(t, r.ID()), f.charged(t, r.ID())
		switch {
		case got.Status() == domain.StatusSucceeded && n == 1:
		case got.Status() == domain.StatusCancelled && n == 0:
		default:
			t.Fatalf("request %s charged %d times", got.Status(), n)
		}
	}
}

// A worker killed between the charge and the record: the attempt runs again once its claim is
// stale, the processor answers the same idempotency key with the first outcome, and the
// request is charged once.
func TestAttemptRunAgainAfterAWorkerDiedDoesNotChargeTwice(t *testing.T) {
	f := newFixture(t, time.Second)
	r := f.request(t, f.agreement(t, simulator.TokenSuccess).ID())
	f.proc.dieOnce = true
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); err == nil {
		t.Fatal("the run that died reported success")
	}
	if got := f.get(t, r.ID()); got.Status() != domain.StatusProcessing || !got.Claimed() || f.charged(t, r.ID()) != 1 {
		t.Fatalf("after the death: %s claimed %v charged %d", got.Status(), got.Claimed(), f.charged(t, r.ID()))
	}
	// asynq runs the task again: while the claim is fresh it is told to wait for it.
	var ra *app.RetryAt
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); !errors.As(err, &ra) || !ra.At.Equal(f.clock.Now().Add(claimTTL)) {
		t.Fatalf("run while the claim is fresh = %v; want a RetryAt the claim's expiry", err)
	}
	f.clock.add(claimTTL)
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, r.ID())
	if got.Status() != domain.StatusSucceeded || got.Attempts() != 1 || len(got.Tries()) != 1 || f.charged(t, r.ID()) != 1 {
		t.Fatalf("after the run again: %s attempts %d tries %d charged %d", got.Status(), got.Attempts(), len(got.Tries()), f.charged(t, r.ID()))
	}
}

// The queue loses everything between attempts; the reconciler queues the retry again from the
// store, and a task that is no longer due does nothing.
func TestReconcilerRestoresALostSchedule(t *testing.T) {
	f := newFixture(t, time.Second)
	r := f.request(t, f.agreement(t, simulator.TokenSucceedFromAttempt2).ID())
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); err != nil {
		t.Fatal(err)
	}
	due := f.get(t, r.ID()).NextRetryAt()
	if !f.sched.has(r.ID(), 2) || !due.Equal(f.clock.Now().Truncate(time.Second).Add(24*time.Hour)) {
		t.Fatalf("retry not scheduled 24 h after the failure: %v", due)
	}
	f.sched.flush()
	if n, err := f.svc.Reconcile(t.Context()); err != nil || n != 1 || !f.sched.has(r.ID(), 2) {
		t.Fatalf("Reconcile after a flush = %d, %v; want the retry queued again", n, err)
	}
	// A task lost without the queue noticing: queued again once it is overdue.
	f.sched.tasks = map[string]time.Time{}
	if n, _ := f.svc.Reconcile(t.Context()); n != 0 {
		t.Fatalf("Reconcile queued %d attempts that are not due", n)
	}
	f.clock.add(24*time.Hour + 2*time.Minute)
	if n, err := f.svc.Reconcile(t.Context()); err != nil || n != 1 || !f.sched.has(r.ID(), 2) {
		t.Fatalf("Reconcile of an overdue attempt = %d, %v", n, err)
	}
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 2); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 2); err != nil {
		t.Fatal(err) // a duplicate task finds the request closed
	}
	if got := f.get(t, r.ID()); got.Status() != domain.StatusSucceeded || f.charged(t, r.ID()) != 2 {
		t.Fatalf("%s, charged %d times; want succeeded after 2 charges", got.Status(), f.charged(t, r.ID()))
	}
}

// Cancelling an agreement cancels its open requests; one an attempt is charging is left to the
// reconciler, which cancels it once the attempt has recorded a failure.
func TestAgreementCancellationCascade(t *testing.T) {
	f := newFixture(t, 30*time.Millisecond)
	a := f.agreement(t, simulator.TokenInsufficientFunds)
	pending, busy := f.request(t, a.ID()), f.request(t, a.ID())
	f.proc.entered, f.proc.gate = make(chan struct{}, 1), make(chan struct{})
	attempt := make(chan error, 1)
	go func() { attempt <- f.svc.RunAttempt(context.Background(), busy.ID(), 1) }()
	<-f.proc.entered
	got, err := f.svc.CancelAgreement(t.Context(), f.caller, a.ID())
	if err != nil || got.Status() != domain.AgreementCancelled {
		t.Fatalf("CancelAgreement = %v, %v", got, err)
	}
	if p := f.get(t, pending.ID()); p.Status() != domain.StatusCancelled || p.StopReason() != domain.StopAgreementCancelled {
		t.Fatalf("pending request: %s %s", p.Status(), p.StopReason())
	}
	close(f.proc.gate)
	if err := <-attempt; err != nil {
		t.Fatal(err)
	}
	if b := f.get(t, busy.ID()); b.Status() != domain.StatusProcessing {
		t.Fatalf("the charging request: %s", b.Status())
	}
	if _, err := f.svc.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b := f.get(t, busy.ID()); b.Status() != domain.StatusCancelled || b.StopReason() != domain.StopAgreementCancelled {
		t.Fatalf("after the reconciler: %s %s", b.Status(), b.StopReason())
	}
	if _, err := f.svc.CreateRequest(t.Context(), f.caller, app.CreateRequest{Agreement: ptr(a.ID()), Amount: ptr(int64(1)), Currency: ptr("eur")}); domainerr.CodeOf(err) != domain.CodeAgreementNotActive {
		t.Fatalf("request against a cancelled agreement: %v", err)
	}
}

// The events of a request that succeeds at its second attempt, in order, with the API request
// named only where one caused them: each charge's outcome comes before the request's, and
// carries the charge as attempt_log shows it.
func TestEventsOfACollection(t *testing.T) {
	f := newFixture(t, time.Second)
	r := f.request(t, f.agreement(t, simulator.TokenSucceedFromAttempt2).ID())
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); err != nil {
		t.Fatal(err)
	}
	f.clock.add(24 * time.Hour)
	if _, err := f.svc.AdvanceRequest(t.Context(), f.caller, r.ID()); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 2); err != nil {
		t.Fatal(err)
	}
	want := []string{eventtype.PaymentAgreementCreated, eventtype.PaymentRequestCreated, eventtype.PaymentRequestProcessing,
		eventtype.ChargeFailed, eventtype.PaymentRequestRetrying, eventtype.ChargeSucceeded, eventtype.PaymentRequestSucceeded}
	// Writes publish their events on goroutines of their own.
	for deadline := time.Now().Add(5 * time.Second); len(f.queue.Events()) < len(want) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	var types []string
	for _, ev := range f.queue.Events() {
		types = append(types, ev.Type)
		if bg := ev.Request.ID == nil; bg != (ev.Type != eventtype.PaymentAgreementCreated && ev.Type != eventtype.PaymentRequestCreated) {
			t.Errorf("%s names request %v", ev.Type, ev.Request.ID)
		}
	}
	if len(types) != len(want) {
		t.Fatalf("events %v; want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v; want %v", types, want)
		}
	}
	// The charge events' objects are the request's attempt_log, entry by entry.
	var request struct {
		AttemptLog []json.RawMessage `json:"attempt_log"`
	}
	done, err := json.Marshal(httpport.RequestObject(f.get(t, r.ID())))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(done, &request); err != nil {
		t.Fatal(err)
	}
	var charges []string
	for _, ev := range f.queue.Events() {
		if ev.Type == eventtype.ChargeFailed || ev.Type == eventtype.ChargeSucceeded {
			charges = append(charges, string(ev.Data.Object))
		}
	}
	if len(request.AttemptLog) != 2 || len(charges) != 2 {
		t.Fatalf("attempt_log %s; charge events' objects %v", done, charges)
	}
	for i, c := range charges {
		if c != string(request.AttemptLog[i]) {
			t.Errorf("charge event %d's object %s; attempt_log[%d] is %s", i, c, i, request.AttemptLog[i])
		}
	}
}

// Each charge gets an id of its own from the id generator, kept through the record: the
// attempt_log of a request whose first method is declined and second succeeds holds two
// charges of attempt 1, each naming its method, and their ids are the charges' events'.
func TestChargesOfAnAttempt(t *testing.T) {
	f := newFixture(t, time.Second)
	a := f.agreement(t, simulator.TokenDeclined, simulator.TokenSuccess)
	r := f.request(t, a.ID())
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); err != nil {
		t.Fatal(err)
	}
	tries := f.get(t, r.ID()).Tries()
	methods := a.Methods()
	if len(tries) != 2 || tries[0].Method != methods[0].ID || tries[0].Succeeded || tries[0].FailureCode != simulator.CodeDeclined ||
		tries[1].Method != methods[1].ID || !tries[1].Succeeded {
		t.Fatalf("charges %+v", tries)
	}
	if !ids.Valid(ids.Charge, tries[0].ID) || !ids.Valid(ids.Charge, tries[1].ID) || tries[0].ID >= tries[1].ID {
		t.Fatalf("charge ids %q, %q: want two time-ordered ch_ ids", tries[0].ID, tries[1].ID)
	}
	chargeEvents := func() []string {
		var out []string
		for _, ev := range f.queue.Events() {
			var obj struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Request string `json:"payment_request"`
				Outcome string `json:"outcome"`
			}
			if err := json.Unmarshal(ev.Data.Object, &obj); err != nil {
				t.Fatal(err)
			}
			if obj.Object == domain.ObjectCharge {
				out = append(out, ev.Type+" "+obj.ID+" "+obj.Request+" "+obj.Outcome)
			}
		}
		return out
	}
	// Writes publish their events on goroutines of their own.
	got := chargeEvents()
	for deadline := time.Now().Add(5 * time.Second); len(got) < 2 && time.Now().Before(deadline); got = chargeEvents() {
		time.Sleep(10 * time.Millisecond)
	}
	want := []string{
		eventtype.ChargeFailed + " " + tries[0].ID + " " + r.ID() + " failed",
		eventtype.ChargeSucceeded + " " + tries[1].ID + " " + r.ID() + " succeeded",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("charge events %v; want %v", got, want)
	}
}

// waitEvents waits until the queue holds n events (writes publish theirs on goroutines of
// their own) and returns them.
func (f *fixture) waitEvents(t *testing.T, n int) []events.Event {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(f.queue.Events()) < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	evs := f.queue.Events()
	if len(evs) != n {
		var types []string
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		t.Fatalf("%d events %v; want %d", len(evs), types, n)
	}
	return evs
}

// An update's previous_attributes are the fields it changed, with their values before: the
// engine's payment_agreement.updated (a hard decline fails a method) carries the payment
// methods as they were, and the cancel's payment_agreement.cancelled the status and
// cancelled_at. The engine's events name no API request; the cancel's, and those of its
// cascade, name the request that cancelled (and its idempotency key).
func TestPreviousAttributesAndCausesOfEvents(t *testing.T) {
	f := newFixture(t, time.Second)
	a := f.agreement(t, simulator.TokenDeclined, simulator.TokenInsufficientFunds)
	created, err := events.FieldsOf(httpport.AgreementObject(a))
	if err != nil {
		t.Fatal(err)
	}
	r := f.request(t, a.ID())
	if err := f.svc.RunAttempt(t.Context(), r.ID(), 1); err != nil {
		t.Fatal(err)
	}
	// The engine's events (processing, two charges, retrying) and the agreement's update.
	f.waitEvents(t, 7)
	failed, err := f.svc.GetAgreement(t.Context(), f.caller, a.ID())
	if err != nil {
		t.Fatal(err)
	}
	if m := failed.Methods()[0]; m.Status != domain.MethodFailed {
		t.Fatalf("the hard-declined method is %+v", m)
	}
	canceller := identity.Identity{Account: "acct_1", RequestID: "req_cancel", IdempotencyKey: "idem_cancel"}
	if _, err := f.svc.CancelAgreement(t.Context(), canceller, a.ID()); err != nil {
		t.Fatal(err)
	}
	evs := f.waitEvents(t, 9)

	byType := map[string]events.Event{}
	for _, ev := range evs {
		if _, dup := byType[ev.Type]; dup && ev.Type != eventtype.ChargeFailed {
			t.Fatalf("two %s events", ev.Type)
		}
		byType[ev.Type] = ev
	}
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	for typ, want := range map[string]string{
		eventtype.PaymentAgreementCreated:   "req_1 null",
		eventtype.PaymentRequestCreated:     "req_1 null",
		eventtype.PaymentRequestProcessing:  "null null",
		eventtype.ChargeFailed:              "null null",
		eventtype.PaymentRequestRetrying:    "null null",
		eventtype.PaymentAgreementUpdated:   "null null",
		eventtype.PaymentAgreementCancelled: "req_cancel idem_cancel",
		eventtype.PaymentRequestCancelled:   "req_cancel idem_cancel",
	} {
		ev, ok := byType[typ]
		if !ok {
			t.Fatalf("no %s event", typ)
		}
		if got := str(ev.Request.ID) + " " + str(ev.Request.IdempotencyKey); got != want {
			t.Errorf("%s names request %s; want %s", typ, got, want)
		}
	}
	for _, ev := range evs {
		update := ev.Type == eventtype.PaymentAgreementUpdated || ev.Type == eventtype.PaymentAgreementCancelled
		if !update && ev.Data.PreviousAttributes != nil {
			t.Errorf("%s carries previous_attributes %s", ev.Type, ev.Data.PreviousAttributes)
		}
	}

	// The update: the payment methods as they were, nothing else; its object is the agreement
	// with the method failed.
	updated := byType[eventtype.PaymentAgreementUpdated]
	if got, want := string(updated.Data.PreviousAttributes), `{"payment_methods":`+string(created["payment_methods"])+`}`; got != want {
		t.Errorf("payment_agreement.updated previous_attributes %s; want %s", got, want)
	}
	if got, err := json.Marshal(httpport.AgreementObject(failed)); err != nil || string(got) != string(updated.Data.Object) {
		t.Errorf("payment_agreement.updated object %s; want %s", updated.Data.Object, got)
	}
	// The cancel: the status and cancelled_at it had.
	if got := string(byType[eventtype.PaymentAgreementCancelled].Data.PreviousAttributes); got != `{"cancelled_at":null,"status":"active"}` {
		t.Errorf("payment_agreement.cancelled previous_attributes %s", got)
	}
}
