package app_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/servicetest"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
)

// The webhook portal's use cases: sessions (token, expiry, scope, access) and what a session
// shows and does, on the real repositories with an injected clock.

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func portalEnv(t *testing.T) (*env, *clock) {
	t.Helper()
	e := newEnv(t)
	c := &clock{now: time.Now()}
	e.svc.Now = c.Now
	e.svc.Portals = mongo.NewPortalSessions(servicetest.Store(t))
	return e, c
}

// delivered stores an event of the caller's with one failed delivery to ep, as a fan-out and
// a first attempt answered 500 would.
func (e *env) delivered(t *testing.T, caller app.Caller, ep string) *domain.Delivery {
	t.Helper()
	ev := e.event(t, "payment_request.failed")
	ev.Account, ev.Livemode = caller.Account, caller.Livemode
	d := domain.NewDelivery(domain.NewDeliveryParams{ID: e.gen.New(domain.DeliveryIDPrefix), Event: ev.ID, Endpoint: ep,
		Account: caller.Account, Livemode: caller.Livemode, EventCreated: time.Unix(ev.Created, 0), Created: time.Now()})
	if _, err := d.Record(1, domain.Result{At: time.Now(), Duration: 12 * time.Millisecond, Status: 500}, domain.Schedule{time.Hour}, 0); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.events.Insert(t.Context(), domain.NewEventRecord(ev, []domain.Target{{Delivery: d.ID(), Endpoint: ep, Status: domain.DeliveryPending}})); err != nil || !ok {
		t.Fatalf("event: %v %v", ok, err)
	}
	if ok, err := e.delivs.Create(t.Context(), d); err != nil || !ok {
		t.Fatalf("delivery: %v %v", ok, err)
	}
	return d
}

func TestPortalSessionCreate(t *testing.T) {
	t.Parallel()
	e, _ := portalEnv(t)
	ep := e.endpoint(t, "*")
	other := app.Caller{Account: e.gen.New(ids.Account)}

	ps, token, err := e.svc.CreatePortalSession(t.Context(), e.caller, app.CreatePortalSession{})
	if err != nil {
		t.Fatal(err)
	}
	if !ids.Valid(domain.PortalSessionIDPrefix, ps.ID()) || len(token) != len("wpst_")+43 || ps.Access() != domain.PortalReadOnly || ps.Endpoint() != "" {
		t.Fatalf("session %+v, token %q", ps.State(), token)
	}
	stored, err := e.svc.Portals.Load(t.Context(), ps.ID())
	if err != nil || stored.State() != ps.State() || stored.State().TokenHash != domain.HashPortalToken(token) {
		t.Fatalf("stored %+v (%v), want %+v", stored, err, ps.State())
	}

	rw := "read_write"
	scoped, _, err := e.svc.CreatePortalSession(t.Context(), e.caller, app.CreatePortalSession{Endpoint: ptr(ep.ID()), Access: &rw})
	if err != nil || scoped.Endpoint() != ep.ID() || !scoped.Writable() {
		t.Fatalf("scoped: %v %+v", err, scoped)
	}

	// Bad input is refused naming the parameter; another account's endpoint is not found.
	for _, tc := range []struct {
		name        string
		caller      app.Caller
		in          app.CreatePortalSession
		kind        domainerr.Kind
		param, code string
	}{
		{"access", e.caller, app.CreatePortalSession{Access: ptr("write")}, domainerr.Invalid, "access", domainerr.CodeParameterInvalid},
		{"return_url", e.caller, app.CreatePortalSession{ReturnURL: ptr("ftp://x")}, domainerr.Invalid, "return_url", domainerr.CodeURLNotHTTPS},
		{"bad access before a missing endpoint", e.caller, app.CreatePortalSession{Access: ptr("x"), Endpoint: ptr("we_nope")}, domainerr.Invalid, "access", domainerr.CodeParameterInvalid},
		{"malformed endpoint", e.caller, app.CreatePortalSession{Endpoint: ptr("we_nope")}, domainerr.NotFound, "endpoint", domainerr.CodeResourceMissing},
		{"empty endpoint", e.caller, app.CreatePortalSession{Endpoint: ptr("")}, domainerr.Invalid, "endpoint", domainerr.CodeParameterInvalid},
		{"another account's endpoint", other, app.CreatePortalSession{Endpoint: ptr(ep.ID())}, domainerr.NotFound, "endpoint", domainerr.CodeResourceMissing},
		{"the other mode's endpoint", app.Caller{Account: e.caller.Account, Livemode: true}, app.CreatePortalSession{Endpoint: ptr(ep.ID())}, domainerr.NotFound, "endpoint", domainerr.CodeResourceMissing},
	} {
		_, _, err := e.svc.CreatePortalSession(t.Context(), tc.caller, tc.in)
		de := domainerr.As(err)
		if de == nil || de.Kind != tc.kind || de.Param != tc.param || de.Code != tc.code {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestPortalSessionOpensForAnHour(t *testing.T) {
	t.Parallel()
	e, clk := portalEnv(t)
	a, tokenA, err := e.svc.CreatePortalSession(t.Context(), e.caller, app.CreatePortalSession{})
	if err != nil {
		t.Fatal(err)
	}
	b, tokenB, err := e.svc.CreatePortalSession(t.Context(), app.Caller{Account: e.gen.New(ids.Account)}, app.CreatePortalSession{})
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := e.svc.OpenPortal(t.Context(), a.ID(), tokenA); err != nil || ps.ID() != a.ID() {
		t.Fatalf("its token: %v", err)
	}
	for name, args := range map[string][2]string{
		"another session's token": {a.ID(), tokenB},
		"a wrong token":           {a.ID(), tokenA + "x"},
		"no token":                {a.ID(), ""},
		"an unknown session":      {e.gen.New(domain.PortalSessionIDPrefix), tokenA},
		"a malformed id":          {"wps_x", tokenA},
	} {
		if _, err := e.svc.OpenPortal(t.Context(), args[0], args[1]); !errors.Is(err, app.ErrPortalNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	clk.add(59*time.Minute + 58*time.Second)
	if _, err := e.svc.OpenPortal(t.Context(), b.ID(), tokenB); err != nil {
		t.Fatalf("just before the hour: %v", err)
	}
	clk.add(2 * time.Second)
	for id, token := range map[string]string{a.ID(): tokenA, b.ID(): tokenB} {
		if _, err := e.svc.OpenPortal(t.Context(), id, token); !errors.Is(err, app.ErrPortalNotFound) {
			t.Fatalf("after the hour: %v", err)
		}
	}
	// Expired sessions are purged.
	if n, err := e.svc.PurgePortalSessions(t.Context()); err != nil || n != 2 {
		t.Fatalf("purged %d, %v", n, err)
	}
}

func TestPortalShowsItsScopeOnly(t *testing.T) {
	t.Parallel()
	e, _ := portalEnv(t)
	ep1, ep2 := e.endpoint(t, "*"), e.endpoint(t, "*")
	d1, d2 := e.delivered(t, e.caller, ep1.ID()), e.delivered(t, e.caller, ep2.ID())
	stranger := app.Caller{Account: e.gen.New(ids.Account)}
	e3, err := e.svc.Create(t.Context(), stranger, app.CreateEndpoint{URL: "https://example.invalid/s", EnabledEvents: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	d3 := e.delivered(t, stranger, e3.ID())

	all, _, err := e.svc.CreatePortalSession(t.Context(), e.caller, app.CreatePortalSession{})
	if err != nil {
		t.Fatal(err)
	}
	one, _, err := e.svc.CreatePortalSession(t.Context(), e.caller, app.CreatePortalSession{Endpoint: ptr(ep1.ID())})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := e.svc.PortalEndpoints(t.Context(), all)
	if err != nil || len(eps) != 2 || eps[0].ID() != ep2.ID() || eps[1].ID() != ep1.ID() {
		t.Fatalf("all endpoints: %v %v", eps, err)
	}
	if eps, err := e.svc.PortalEndpoints(t.Context(), one); err != nil || len(eps) != 1 || eps[0].ID() != ep1.ID() {
		t.Fatalf("the scoped endpoint: %v %v", eps, err)
	}
	if ds, next, err := e.svc.PortalDeliveries(t.Context(), one, ep1.ID(), ""); err != nil || len(ds) != 1 || ds[0].Delivery.ID() != d1.ID() ||
		ds[0].EventType != "payment_request.failed" || next != "" {
		t.Fatalf("deliveries: %+v %q %v", ds, next, err)
	}
	d, ev, err := e.svc.PortalDelivery(t.Context(), all, d2.ID())
	if err != nil || ev == nil || ev.Event.ID != d2.Event() || len(d.Attempts()) != 1 || d.Attempts()[0].Status != 500 {
		t.Fatalf("delivery: %v %v %v", d, ev, err)
	}
	if evs, next, err := e.svc.PortalEvents(t.Context(), all, ""); err != nil || len(evs) != 2 || next != "" {
		t.Fatalf("events of all: %d %q %v", len(evs), next, err)
	}
	if evs, _, err := e.svc.PortalEvents(t.Context(), one, ""); err != nil || len(evs) != 1 || evs[0].Event.Event.ID != d1.Event() || evs[0].Delivery.ID() != d1.ID() {
		t.Fatalf("events of the scoped: %+v %v", evs, err)
	}

	// Outside the scope, another account's, malformed: not found, alike.
	for name, err := range map[string]error{
		"another endpoint":                 second(e.svc.PortalEndpoint(t.Context(), one, ep2.ID())),
		"another endpoint's deliveries":    third(e.svc.PortalDeliveries(t.Context(), one, ep2.ID(), "")),
		"a delivery to another endpoint":   third(e.svc.PortalDelivery(t.Context(), one, d2.ID())),
		"another account's endpoint":       second(e.svc.PortalEndpoint(t.Context(), all, e3.ID())),
		"another account's delivery":       third(e.svc.PortalDelivery(t.Context(), all, d3.ID())),
		"a malformed cursor":               third(e.svc.PortalEvents(t.Context(), all, "wd_x")),
		"a retry of another account's":     second(e.svc.PortalRetryDelivery(t.Context(), all, "req_p", d3.ID())),
		"a rotation of another endpoint's": second(e.svc.PortalRotateSecret(t.Context(), one, "req_p", ep2.ID())),
	} {
		if !errors.Is(err, app.ErrPortalNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func second[A any](_ A, err error) error        { return err }
func third[A, B any](_ A, _ B, err error) error { return err }

func ptr[T any](v T) *T { return &v }

func TestPortalActions(t *testing.T) {
	t.Parallel()
	e, _ := portalEnv(t)
	ep := e.endpoint(t, "*")
	d := e.delivered(t, e.caller, ep.ID())
	ro, _, err := e.svc.CreatePortalSession(t.Context(), e.caller, app.CreatePortalSession{})
	if err != nil {
		t.Fatal(err)
	}
	rw, _, err := e.svc.CreatePortalSession(t.Context(), e.caller, app.CreatePortalSession{Access: ptr("read_write")})
	if err != nil {
		t.Fatal(err)
	}

	// Read-only: every action refused, nothing changed.
	for name, err := range map[string]error{
		"retry":   second(e.svc.PortalRetryDelivery(t.Context(), ro, "req_ro", d.ID())),
		"rotate":  second(e.svc.PortalRotateSecret(t.Context(), ro, "req_ro", ep.ID())),
		"disable": second(e.svc.PortalSetEnabled(t.Context(), ro, "req_ro", ep.ID(), false)),
	} {
		if !errors.Is(err, app.ErrPortalReadOnly) {
			t.Errorf("read-only %s: %v", name, err)
		}
	}
	if got, _ := e.svc.Get(t.Context(), e.caller, ep.ID()); got.Secret() != ep.Secret() || got.Status() != domain.StatusEnabled {
		t.Fatal("a read-only session changed the endpoint")
	}

	// Read-write: the API's own use cases, as the session's account, in the portal's request.
	retried, err := e.svc.PortalRetryDelivery(t.Context(), rw, "req_retry", d.ID())
	if err != nil || retried.Status() != domain.DeliveryPending || retried.NextAttemptAt().IsZero() {
		t.Fatalf("retry: %v %+v", err, retried)
	}
	rotated, err := e.svc.PortalRotateSecret(t.Context(), rw, "req_rotate", ep.ID())
	if err != nil || rotated.Secret() == ep.Secret() || len(rotated.SigningSecrets(time.Now())) != 2 {
		t.Fatalf("rotate: %v", err)
	}
	if off, err := e.svc.PortalSetEnabled(t.Context(), rw, "req_disable", ep.ID(), false); err != nil || off.Status() != domain.StatusDisabled {
		t.Fatalf("disable: %v", err)
	}
	// A delivery to a disabled endpoint cannot be retried: the API's refusal.
	if _, err := e.svc.PortalRetryDelivery(t.Context(), rw, "req_retry2", d.ID()); !errors.Is(err, domain.ErrEndpointDisabled) {
		t.Fatalf("retry to a disabled endpoint: %v", err)
	}
	if on, err := e.svc.PortalSetEnabled(t.Context(), rw, "req_enable", ep.ID(), true); err != nil || on.Status() != domain.StatusEnabled {
		t.Fatalf("enable: %v", err)
	}
	e.relay.Wait()
	var got []string
	for _, ev := range e.queue.Events() {
		if ev.Type != "webhook_endpoint.updated" {
			continue
		}
		if ev.Account != e.caller.Account || ev.Request.IdempotencyKey != nil {
			t.Fatalf("event %+v", ev)
		}
		got = append(got, *ev.Request.ID)
	}
	if len(got) != 2 || got[0] != "req_disable" || got[1] != "req_enable" {
		t.Fatalf("webhook_endpoint.updated events naming %v, want the portal's disable and enable", got)
	}
}
