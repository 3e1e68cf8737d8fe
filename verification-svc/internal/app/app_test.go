package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/verification-svc/internal/adapters/mongo"
	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/domain"
)

// The use cases on the real repository (embedded store), with the clock, the scheduler, the
// provider and the event queue faked so each step is driven by hand.

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

type fakeScheduler struct {
	mu    sync.Mutex
	tasks map[string]time.Time
	down  bool
}

func (f *fakeScheduler) ScheduleExpiry(_ context.Context, session string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("redis down")
	}
	f.tasks[session] = at
	return nil
}

func (f *fakeScheduler) at(session string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[session]
	return t, ok
}

type fakeProvider struct {
	mu    sync.Mutex
	begun []string
}

func (f *fakeProvider) Begin(_ context.Context, s *domain.Session) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.begun = append(f.begun, s.ID())
	return nil
}

type env struct {
	svc      *app.Service
	clock    *clock
	sched    *fakeScheduler
	provider *fakeProvider
	queue    *outboxtest.Queue
	caller   app.Caller
	keys     int
}

// next is the caller of a new request: each create has an Idempotency-Key of its own ("idem-1"
// first), as a client's distinct creates do (one key for two creates is a retry: one session).
func (e *env) next() app.Caller {
	e.keys++
	c := e.caller
	c.IdempotencyKey = fmt.Sprintf("idem-%d", e.keys)
	return c
}

func setup(t *testing.T, allowPrivate bool) *env {
	t.Helper()
	q := &outboxtest.Queue{}
	c := &clock{t: time.Now().Truncate(time.Second)}
	gen := ids.NewGenerator(nil)
	emitter := &events.Emitter[*domain.Session]{IDs: gen, Now: c.now,
		Object: func(s *domain.Session) any { return map[string]any{"id": s.ID(), "status": s.Status()} },
		Parts: map[string]func(*domain.Session, any) any{
			"verification_report.created": func(s *domain.Session, _ any) any {
				return map[string]any{"id": s.Report().ID, "verification_session": s.ID()}
			},
		},
	}
	repo := mongo.NewSessions(servicetest.Store(t), outboxtest.NewRelay(q), emitter)
	if err := repo.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	e := &env{
		clock: c, sched: &fakeScheduler{tasks: map[string]time.Time{}},
		provider: &fakeProvider{}, queue: q,
		caller: app.Caller{Account: gen.New(ids.Account), RequestID: "req_test", IdempotencyKey: "idem-1"},
	}
	e.svc = app.New(app.Deps{Sessions: repo, Scheduler: e.sched, Provider: e.provider, Now: e.clock.now, IDs: gen},
		app.Config{TTL: time.Hour, AllowPrivate: allowPrivate})
	return e
}

func ptr[T any](v T) *T { return &v }

func input(webhookURL string) app.CreateSession {
	in := app.CreateSession{
		Applicant: &domain.ApplicantParams{FirstName: ptr("Jane"), LastName: ptr("Doe"), Email: ptr("jane@example.com")},
		Products:  []string{"identity", "credit"},
	}
	if webhookURL != "" {
		in.WebhookURL = &webhookURL
	}
	return in
}

// published returns the queue's events about session id, in order.
func (e *env) published(id string) []events.Event {
	var out []events.Event
	for _, ev := range e.queue.Events() {
		if strings.Contains(string(ev.Data.Object), id) {
			out = append(out, ev)
		}
	}
	return out
}

// waitPublished waits for the fast path to publish n events about id (it publishes in the
// background) and returns them.
func (e *env) waitPublished(t *testing.T, id string, n int) []events.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs := e.published(id)
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events about %s published, want %d: %v", len(evs), id, n, evs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCreate(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	s, err := e.svc.Create(t.Context(), e.next(), input("https://hooks.example.com/vs"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.ClientSecret(), s.ID()+"_secret_") || len(s.ClientSecret()) < len(s.ID()+"_secret_")+32 ||
		!strings.HasPrefix(s.WebhookSecret(), "whsec_") {
		t.Fatalf("secrets %q %q", s.ClientSecret(), s.WebhookSecret())
	}
	if at, ok := e.sched.at(s.ID()); !ok || !at.Equal(s.ExpiresAt()) || !s.ExpiresAt().Equal(e.clock.now().Add(time.Hour)) {
		t.Fatalf("expiry scheduled at %s (%v); expires_at %s", at, ok, s.ExpiresAt())
	}
	ev := e.waitPublished(t, s.ID(), 1)[0]
	if ev.Type != "verification_session.created" || ev.Request.ID == nil || *ev.Request.ID != "req_test" ||
		ev.Request.IdempotencyKey == nil || *ev.Request.IdempotencyKey != "idem-1" || ev.Data.PreviousAttributes != nil ||
		ev.Account != e.caller.Account || ev.Livemode || ev.Created != e.clock.now().Unix() ||
		string(ev.Data.Object) != `{"id":"`+s.ID()+`","status":"created"}` {
		t.Fatalf("event %+v", ev)
	}
	if d := ev.Destination; d == nil || d.URL != "https://hooks.example.com/vs" || d.Secret != s.WebhookSecret() {
		t.Fatalf("the created event is not routed to the session's webhook_url: %+v", d)
	}
	if len(e.provider.begun) != 0 {
		t.Fatal("a test-mode session was handed to the provider")
	}

	// Without a webhook_url: no destination, the account's endpoints get the events.
	s2, err := e.svc.Create(t.Context(), e.next(), input(""))
	if err != nil {
		t.Fatal(err)
	}
	if ev := e.waitPublished(t, s2.ID(), 1)[0]; ev.Destination != nil || s2.WebhookSecret() != "" {
		t.Fatalf("destination %+v, webhook secret %q without a webhook_url", ev.Destination, s2.WebhookSecret())
	}

	// Live mode goes to the provider.
	live := e.caller
	live.Livemode = true
	s3, err := e.svc.Create(t.Context(), live, input(""))
	if err != nil || len(e.provider.begun) != 1 || e.provider.begun[0] != s3.ID() || !s3.Livemode() {
		t.Fatalf("live create: %v, provider %v", err, e.provider.begun)
	}

	// The queue being down costs the expiry task, not the session: the sweep catches it.
	e.sched.mu.Lock()
	e.sched.down = true
	e.sched.mu.Unlock()
	if _, err := e.svc.Create(t.Context(), e.next(), input("")); err != nil {
		t.Fatalf("create with the queue down: %v", err)
	}
}

// The webhook_url passes the same guard as webhook endpoints' URLs, unless it is lifted.
func TestWebhookURLGuard(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	for _, u := range []string{"https://127.0.0.1/x", "https://localhost:8443/x", "https://10.1.2.3/x", "https://[::1]/x",
		"https://169.254.169.254/latest", "https://0x7f000001/x", "https://api.localhost/x"} {
		_, err := e.svc.Create(t.Context(), e.next(), input(u))
		if de := domainerr.As(err); de == nil || de.Code != "url_not_allowed" || de.Param != "webhook_url" {
			t.Errorf("%s: %v; want url_not_allowed naming webhook_url", u, err)
		}
	}
	if _, err := setup(t, true).svc.Create(t.Context(), e.caller, input("https://127.0.0.1/x")); err != nil {
		t.Fatalf("with the guard lifted: %v", err)
	}
}

func TestExpire(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	s, err := e.svc.Create(t.Context(), e.next(), input("https://hooks.example.com/vs"))
	if err != nil {
		t.Fatal(err)
	}
	// Early (another clock ran the task): refused, so the task runs again later.
	if err := e.svc.Expire(t.Context(), s.ID()); !errors.Is(err, app.ErrNotDue) {
		t.Fatalf("early Expire = %v; want ErrNotDue", err)
	}
	e.clock.add(time.Hour)
	if err := e.svc.Expire(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	got, _ := e.svc.Get(t.Context(), e.caller, s.ID())
	if got.Status() != domain.StatusExpired || got.LastError() == nil || got.LastError().Code != domain.ErrorAbandoned {
		t.Fatalf("after expiry: %s %+v", got.Status(), got.LastError())
	}
	evs := e.waitPublished(t, s.ID(), 2)
	if evs[1].Type != "verification_session.expired" || evs[1].Request.ID != nil || evs[1].Request.IdempotencyKey != nil ||
		evs[1].Destination == nil || evs[1].Data.PreviousAttributes != nil {
		t.Fatalf("expired event %+v: a background transition names no request, and keeps the session's destination", evs[1])
	}
	// Again (a task run twice), on a missing session, on one that moved on: nothing happens.
	if err := e.svc.Expire(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Expire(t.Context(), ids.NewGenerator(nil).New(ids.VerificationSession)); err != nil {
		t.Fatal(err)
	}
	s2, _ := e.svc.Create(t.Context(), e.next(), input(""))
	if _, err := e.svc.Cancel(t.Context(), e.caller, s2.ID(), nil); err != nil {
		t.Fatal(err)
	}
	e.clock.add(2 * time.Hour)
	if err := e.svc.Expire(t.Context(), s2.ID()); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.svc.Get(t.Context(), e.caller, s2.ID()); got.Status() != domain.StatusCanceled {
		t.Fatalf("a canceled session expired: %s", got.Status())
	}
	time.Sleep(50 * time.Millisecond) // let any stray publish land before counting
	if n := len(e.published(s.ID())); n != 2 {
		t.Fatalf("%d events about the expired session; want created and expired once", n)
	}
}

// The sweep expires what lost its task, leaving the task its grace first.
func TestExpireOverdue(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	var created []*domain.Session
	for range 3 {
		s, err := e.svc.Create(t.Context(), e.next(), input(""))
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, s)
	}
	started, err := e.svc.Advance(t.Context(), e.caller, created[1].ID(), domain.Advance{To: domain.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Advance(t.Context(), e.caller, created[2].ID(), domain.Advance{To: domain.StatusPending}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Advance(t.Context(), e.caller, created[2].ID(), domain.Advance{To: domain.StatusProcessing}); err != nil {
		t.Fatal(err)
	}
	e.clock.add(time.Hour + 2*time.Second) // past expires_at, within the grace
	if n, err := e.svc.ExpireOverdue(t.Context(), 5*time.Second); err != nil || n != 0 {
		t.Fatalf("within the grace: %d, %v", n, err)
	}
	e.clock.add(5 * time.Second)
	if n, err := e.svc.ExpireOverdue(t.Context(), 5*time.Second); err != nil || n != 2 {
		t.Fatalf("after the grace: %d, %v; want the created and the pending one", n, err)
	}
	for i, want := range []domain.Status{domain.StatusExpired, domain.StatusExpired, domain.StatusProcessing} {
		got, _ := e.svc.Get(t.Context(), e.caller, created[i].ID())
		if got.Status() != want {
			t.Errorf("session %d: %s, want %s", i, got.Status(), want)
		}
	}
	if got, _ := e.svc.Get(t.Context(), e.caller, started.ID()); len(got.Attempts()) != 1 || got.Attempts()[0].Outcome != domain.StatusExpired {
		t.Fatalf("the pending session's attempt: %+v", got.Attempts())
	}
	if n, err := e.svc.ExpireOverdue(t.Context(), 5*time.Second); err != nil || n != 0 {
		t.Fatalf("a second sweep: %d, %v", n, err)
	}
}

func TestAdvanceAndReport(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	s, _ := e.svc.Create(t.Context(), e.next(), input("https://hooks.example.com/vs"))
	reportID := domain.ReportID(s.ID())
	if _, err := e.svc.GetReport(t.Context(), e.caller, reportID); !errors.Is(err, domain.ErrReportNotFound) {
		t.Fatalf("report before completion: %v", err)
	}
	for _, to := range []domain.Status{domain.StatusPending, domain.StatusProcessing} {
		if _, err := e.svc.Advance(t.Context(), e.caller, s.ID(), domain.Advance{To: to}); err != nil {
			t.Fatal(err)
		}
	}
	done, err := e.svc.Advance(t.Context(), e.caller, s.ID(), domain.Advance{To: domain.StatusCompleted,
		Outcomes: map[domain.Product]domain.ResultStatus{domain.ProductCredit: domain.ResultFailed}})
	if err != nil || done.Status() != domain.StatusCompleted {
		t.Fatalf("complete: %v", err)
	}
	got, err := e.svc.GetReport(t.Context(), e.caller, reportID)
	if err != nil || got.Report().ID != reportID || got.Report().Products[1].Status != domain.ResultFailed {
		t.Fatalf("report: %v %+v", err, got)
	}
	var types []string
	evs := e.waitPublished(t, s.ID(), 5)
	for _, ev := range evs {
		types = append(types, ev.Type)
		if ev.Destination == nil {
			t.Errorf("%s is not routed to the webhook_url", ev.Type)
		}
		if ev.Request.ID == nil || *ev.Request.ID != "req_test" || ev.Data.PreviousAttributes != nil {
			t.Errorf("%s: request %+v, previous_attributes %s", ev.Type, ev.Request, ev.Data.PreviousAttributes)
		}
	}
	want := "verification_session.created verification_session.pending verification_session.processing verification_report.created verification_session.completed"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v", types)
	}
	// The report's event shows the report; the completion's, the session.
	if got, want := string(evs[3].Data.Object), `{"id":"`+reportID+`","verification_session":"`+s.ID()+`"}`; got != want {
		t.Fatalf("report event object %s; want %s", got, want)
	}
	if got := string(evs[4].Data.Object); got != `{"id":"`+s.ID()+`","status":"completed"}` {
		t.Fatalf("completed event object %s", got)
	}
	// Not the caller's: not found, as is a malformed id.
	other := e.caller
	other.Account = "acct_other"
	for _, c := range []struct {
		who app.Caller
		id  string
	}{{other, reportID}, {e.caller, "vr_nope"}, {e.caller, s.ID()}} {
		if _, err := e.svc.GetReport(t.Context(), c.who, c.id); !errors.Is(err, domain.ErrReportNotFound) {
			t.Errorf("GetReport(%s as %s) = %v", c.id, c.who.Account, err)
		}
	}
	// An edge the lifecycle does not have: 400 invalid_state.
	_, err = e.svc.Advance(t.Context(), e.caller, s.ID(), domain.Advance{To: domain.StatusPending})
	if de := domainerr.As(err); de == nil || de.Code != "invalid_state" || de.Kind != domainerr.Invalid {
		t.Fatalf("completed → pending: %v", err)
	}
	// Live mode has no test helper.
	live := e.caller
	live.Livemode = true
	if _, err := e.svc.Advance(t.Context(), live, s.ID(), domain.Advance{To: domain.StatusPending}); domainerr.KindOf(err) != domainerr.NotFound {
		t.Fatalf("live advance: %v", err)
	}
}

func TestCancelAndRedact(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	s, _ := e.svc.Create(t.Context(), e.next(), input(""))
	if _, err := e.svc.Redact(t.Context(), e.caller, s.ID()); domainerr.CodeOf(err) != "invalid_state" {
		t.Fatalf("redact a created session: %v", err)
	}
	if _, err := e.svc.Cancel(t.Context(), e.caller, s.ID(), ptr("bored")); domainerr.As(err) == nil || domainerr.As(err).Param != "cancellation_reason" {
		t.Fatalf("bad reason: %v", err)
	}
	c, err := e.svc.Cancel(t.Context(), e.caller, s.ID(), ptr("duplicate"))
	if err != nil || c.Status() != domain.StatusCanceled || c.CancellationReason() != domain.CancelDuplicate {
		t.Fatalf("cancel: %v %+v", err, c)
	}
	again, err := e.svc.Cancel(t.Context(), e.caller, s.ID(), ptr("other"))
	if err != nil || again.CancellationReason() != domain.CancelDuplicate {
		t.Fatalf("cancel again: %v %s", err, again.CancellationReason())
	}
	r, err := e.svc.Redact(t.Context(), e.caller, s.ID())
	if err != nil || r.Applicant().Email != domain.Redacted || r.RedactedAt().IsZero() {
		t.Fatalf("redact: %v", err)
	}
	if _, err := e.svc.Redact(t.Context(), e.caller, s.ID()); err != nil {
		t.Fatalf("redact again: %v", err)
	}
	var types []string
	for _, ev := range e.waitPublished(t, s.ID(), 3) {
		types = append(types, ev.Type)
	}
	time.Sleep(50 * time.Millisecond)
	if got := strings.Join(types, " "); got != "verification_session.created verification_session.canceled verification_session.redacted" ||
		len(e.published(s.ID())) != 3 {
		t.Fatalf("events %v: a repeated cancel or redaction raises nothing", types)
	}
	if _, err := e.svc.Cancel(t.Context(), e.caller, "vs_nope", nil); !errors.Is(err, domain.ErrSessionNotFound) {
		t.Fatalf("cancel of a malformed id: %v", err)
	}
}
