package mongo_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/domain"
)

// The events an endpoint raised are rendered and stored with it, and published: on create, on
// update (with the previous values of the fields the change rendered differently), and on
// delete, after which the endpoint is gone. Each names the request of the write's context, and
// none without one (the service's own work).
func TestEndpointEventsArePublished(t *testing.T) {
	t.Parallel()
	queue := &outboxtest.Queue{}
	relay := outboxtest.NewRelay(queue)
	gen := ids.NewGenerator(nil)
	emitter := &events.Emitter[*domain.Endpoint]{IDs: gen, Now: time.Now, Object: func(e *domain.Endpoint) any {
		return map[string]any{"id": e.ID(), "status": e.Status(), "url": e.URL()}
	}}
	repo := mongo.NewRepository(servicetest.Store(t), relay, emitter, 0)
	ctx := t.Context()
	f := newFixture(t, repo)
	caused := events.CausedBy(ctx, identity.Identity{Account: f.account, RequestID: "req_1", IdempotencyKey: "key-1"})
	e := f.endpoint(false, "outbox") // raises webhook_endpoint.created
	if _, err := repo.Create(caused, e); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.UpdateAny(ctx, e.ID(), func(e *domain.Endpoint) error {
		if changed, disabled := e.DeliveryFailed(time.Now().Add(-time.Hour), time.Minute); !changed || disabled {
			t.Fatalf("first failure: changed %v, disabled %v", changed, disabled)
		}
		return nil // nothing shown changed, no event
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.UpdateAny(ctx, e.ID(), func(e *domain.Endpoint) error {
		if !e.DeliveryGone() {
			t.Fatal("DeliveryGone did not disable an enabled endpoint")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	url := "https://example.com/moved"
	if _, err := repo.Update(caused, e.ID(), f.account, false, func(e *domain.Endpoint) error {
		return e.Update(domain.Changes{URL: &url})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Update(caused, e.ID(), f.account, false, func(e *domain.Endpoint) error {
		e.Delete()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	relay.Wait()
	relay.Sweep(ctx)
	published := queue.Events()
	type want struct {
		typ, previous string
		request       bool
	}
	wants := []want{
		{"webhook_endpoint.created", "", true},
		{"webhook_endpoint.disabled", `{"status":"enabled"}`, false},
		{"webhook_endpoint.updated", `{"url":"https://example.com/hooks"}`, true},
		{"webhook_endpoint.deleted", "", true},
	}
	if len(published) != len(wants) {
		t.Fatalf("published %+v, want %v", published, wants)
	}
	for i, w := range wants {
		ev := published[i]
		if ev.Type != w.typ || string(ev.Data.PreviousAttributes) != w.previous || ev.Account != f.account {
			t.Fatalf("event %d: %s %s, want %+v", i, ev.Type, ev.Data.PreviousAttributes, w)
		}
		if named := ev.Request.ID != nil && *ev.Request.ID == "req_1" && ev.Request.IdempotencyKey != nil && *ev.Request.IdempotencyKey == "key-1"; named != w.request ||
			(!w.request && (ev.Request.ID != nil || ev.Request.IdempotencyKey != nil)) {
			t.Fatalf("event %d (%s) names request %+v", i, ev.Type, ev.Request)
		}
	}
	if _, err := repo.Get(ctx, e.ID(), f.account, false); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get of a deleted endpoint: %v", err)
	}
}

func TestSubscribed(t *testing.T) {
	t.Parallel()
	db := servicetest.Store(t)
	for _, ttl := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("cache=%s", ttl), func(t *testing.T) {
			t.Parallel()
			repo := mongo.NewRepository(db, newRelay(), nil, ttl)
			ctx := t.Context()
			f := newFixture(t, repo)
			// With the cache on, the first read loads it, so what follows is applied to it.
			if _, err := repo.Subscribed(ctx, f.account, false, "payment_request.succeeded"); err != nil {
				t.Fatal(err)
			}
			mk := func(livemode bool, events []string, disabled bool) string {
				e := f.endpoint(livemode, "")
				if err := e.Update(domain.Changes{EnabledEvents: events}); err != nil {
					t.Fatal(err)
				}
				if disabled {
					e.Disable()
				}
				if _, err := repo.Create(ctx, e); err != nil {
					t.Fatal(err)
				}
				return e.ID()
			}
			all := mk(false, []string{"*"}, false)
			exact := mk(false, []string{"payment_request.failed", "payment_request.succeeded"}, false)
			mk(false, []string{"payment_request.created"}, false)       // another type
			mk(false, []string{"*"}, true)                              // disabled
			mk(true, []string{"payment_request.succeeded", "*"}, false) // other mode
			newFixture(t, repo).create(false, "other account")          // other account
			gone := mk(false, []string{"*"}, false)
			if _, err := repo.Update(ctx, gone, f.account, false, func(e *domain.Endpoint) error { e.Delete(); return nil }); err != nil {
				t.Fatal(err)
			}
			got, err := repo.Subscribed(ctx, f.account, false, "payment_request.succeeded")
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, e := range got {
				gotIDs = append(gotIDs, e.ID())
			}
			if !slices.Equal(gotIDs, []string{all, exact}) {
				t.Fatalf("Subscribed = %v, want %v", gotIDs, []string{all, exact})
			}
		})
	}
}

// The delivery path's cache shows this process's writes at once and another process's within
// its period.
func TestEndpointCache(t *testing.T) {
	t.Parallel()
	db := servicetest.Store(t)
	const ttl = 300 * time.Millisecond
	repo := mongo.NewRepository(db, newRelay(), nil, ttl)
	other := mongo.NewRepository(db, newRelay(), nil, 0) // another process
	ctx := t.Context()
	f := newFixture(t, repo)
	e := f.create(false, "cached")
	subscribed := func() bool {
		t.Helper()
		got, err := repo.Subscribed(ctx, f.account, false, "payment_request.succeeded")
		if err != nil {
			t.Fatal(err)
		}
		return len(got) == 1 && got[0].ID() == e.ID()
	}
	if !subscribed() {
		t.Fatal("a created endpoint is not subscribed")
	}
	if _, err := repo.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error { e.Disable(); return nil }); err != nil {
		t.Fatal(err)
	}
	if subscribed() {
		t.Fatal("this process disabled the endpoint, the cache still delivers to it")
	}
	if c, err := repo.Cached(ctx, e.ID(), f.account, false); err != nil || c.Status() != domain.StatusDisabled {
		t.Fatalf("Cached after a local disable = %v, %v", c, err)
	}
	if _, err := other.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error { e.Enable(); return nil }); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(ttl + 2*time.Second)
	for !subscribed() {
		if time.Now().After(deadline) {
			t.Fatalf("another process enabled the endpoint; the cache did not see it within its period")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// An endpoint another process created is found even before the cache is read again.
	created := newFixture(t, other)
	created.account = f.account
	n := created.create(false, "made elsewhere")
	if c, err := repo.Cached(ctx, n.ID(), f.account, false); err != nil || c.ID() != n.ID() {
		t.Fatalf("Cached(endpoint created elsewhere) = %v, %v", c, err)
	}
	if _, err := repo.Cached(ctx, n.ID(), "acct_someone_else", false); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Cached for another account = %v, want ErrNotFound", err)
	}
}

func TestEndpointDeliveryStateRoundTrips(t *testing.T) {
	t.Parallel()
	repo := mongo.NewRepository(servicetest.Store(t), newRelay(), nil, 0)
	ctx := t.Context()
	f := newFixture(t, repo)
	e := f.create(false, "state")
	now := time.Now().Truncate(time.Millisecond)
	if _, err := repo.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error {
		e.RotateSecret("whsec_bmV3", now, time.Hour)
		e.DeliveryFailed(now, time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := repo.Get(ctx, e.ID(), f.account, false)
	if err != nil {
		t.Fatal(err)
	}
	s := got.State()
	if s.Secret != "whsec_bmV3" || s.PreviousSecret != e.Secret() || !s.PreviousSecretExpires.Equal(now.Add(time.Hour)) ||
		!s.FailingSince.Equal(now) || s.Deleted {
		t.Fatalf("state %+v", s)
	}
	if secrets := got.SigningSecrets(now); !slices.Equal(secrets, []string{"whsec_bmV3", e.Secret()}) {
		t.Fatalf("signing secrets %v", secrets)
	}
}
