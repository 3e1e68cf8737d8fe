package mongo_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/domain"
)

func raise(t *testing.T, gen *ids.Generator, e *domain.Endpoint, typ string) events.Event {
	t.Helper()
	ev, err := events.New(gen, time.Now(), events.Change{Type: typ, Account: e.Account(), Livemode: e.Livemode(), Object: map[string]string{"id": e.ID()}})
	if err != nil {
		t.Fatal(err)
	}
	e.Emit(ev)
	return ev
}

func eventIDs(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// pendingIDs returns the ids of the events in the endpoint's outbox, as the relay sees them.
func pendingIDs(t *testing.T, repo *mongo.Repository, id string) []string {
	t.Helper()
	batches, err := repo.OutboxStore().Pending(t.Context(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range batches {
		if b.AggregateID == id {
			for _, d := range b.Docs {
				out = append(out, d.ID)
			}
		}
	}
	return out
}

func TestOutbox(t *testing.T) {
	t.Parallel()
	db := testkit.MongoDatabase(t)
	repo := mongo.NewRepository(db, nil, 0)
	if err := repo.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	t.Run("events are stored with the write and cleared by the fast path's docs", func(t *testing.T) {
		f := newFixture(t, repo)
		e := f.endpoint(false, "outbox")
		created := raise(t, f.gen, e, "webhook_endpoint.created")
		if err := repo.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		if got := pendingIDs(t, repo, e.ID()); !slices.Equal(got, []string{created.ID}) {
			t.Fatalf("outbox after create = %v", got)
		}
		updated, err := repo.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error {
			e.Disable()
			raise(t, f.gen, e, "webhook_endpoint.updated")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := pendingIDs(t, repo, e.ID()); !slices.Equal(got, []string{created.ID, updated.NewEvents()[0].ID}) {
			t.Fatalf("outbox after update = %v", got)
		}
		// Clearing the first leaves the second.
		if err := repo.OutboxStore().Clear(ctx, e.ID(), repo.OutboxDocs(ctx, e.NewEvents())); err != nil {
			t.Fatal(err)
		}
		if got := pendingIDs(t, repo, e.ID()); !slices.Equal(got, eventIDs(updated.NewEvents())) {
			t.Fatalf("outbox after clearing the first = %v", got)
		}
		if err := repo.OutboxStore().Clear(ctx, e.ID(), repo.OutboxDocs(ctx, updated.NewEvents())); err != nil {
			t.Fatal(err)
		}
		if got := pendingIDs(t, repo, e.ID()); len(got) != 0 {
			t.Fatalf("outbox after clearing both = %v", got)
		}
		// The endpoint itself is intact.
		if got, err := repo.Get(ctx, e.ID(), f.account, false); err != nil || got.Status() != domain.StatusDisabled {
			t.Fatalf("endpoint after clears: %v %v", got, err)
		}
	})

	t.Run("a deleted endpoint is hidden, then removed once its event is out", func(t *testing.T) {
		f := newFixture(t, repo)
		e := f.create(false, "doomed")
		deleted, err := repo.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error {
			e.Delete()
			raise(t, f.gen, e, "webhook_endpoint.deleted")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Get(ctx, e.ID(), f.account, false); err != domain.ErrNotFound {
			t.Fatalf("Get of a deleted endpoint: %v", err)
		}
		if page, _, _ := repo.List(ctx, f.account, false, listing.Params{Limit: 100}); len(page) != 0 {
			t.Fatalf("List shows a deleted endpoint")
		}
		if subs, _ := repo.Subscribed(ctx, f.account, false, "webhook_endpoint.created"); len(subs) != 0 {
			t.Fatalf("a deleted endpoint is subscribed")
		}
		if got := pendingIDs(t, repo, e.ID()); !slices.Equal(got, eventIDs(deleted.NewEvents())) {
			t.Fatalf("outbox of the deleted endpoint = %v", got)
		}
		if err := repo.OutboxStore().Clear(ctx, e.ID(), repo.OutboxDocs(ctx, deleted.NewEvents())); err != nil {
			t.Fatal(err)
		}
		n, err := db.Collection(mongo.Collection).CountDocuments(ctx, bson.D{{Key: "_id", Value: e.ID()}})
		if err != nil || n != 0 {
			t.Fatalf("deleted endpoint still stored after its event was published: %d %v", n, err)
		}
	})

	t.Run("clears racing updates lose nothing", func(t *testing.T) {
		f := newFixture(t, repo)
		e := f.create(false, "race")
		const writers = 8
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Go(func() {
				u, err := repo.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error {
					raise(t, f.gen, e, "webhook_endpoint.updated")
					return e.Update(domain.Changes{Metadata: map[string]string{fmt.Sprintf("writer%d", i): "done"}})
				})
				if err == nil {
					err = repo.OutboxStore().Clear(ctx, e.ID(), repo.OutboxDocs(ctx, u.NewEvents()))
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := pendingIDs(t, repo, e.ID()); len(got) != 0 {
			t.Fatalf("outbox left with %v", got)
		}
		assertAllWriters(t, repo, f, e.ID(), writers)
	})
}

func TestSubscribed(t *testing.T) {
	t.Parallel()
	db := testkit.MongoDatabase(t)
	for _, ttl := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("cache=%s", ttl), func(t *testing.T) {
			t.Parallel()
			repo := mongo.NewRepository(db, nil, ttl)
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
				if err := repo.Create(ctx, e); err != nil {
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
	db := testkit.MongoDatabase(t)
	const ttl = 300 * time.Millisecond
	repo := mongo.NewRepository(db, nil, ttl)
	other := mongo.NewRepository(db, nil, 0) // another process
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
	repo := mongo.NewRepository(testkit.MongoDatabase(t), nil, 0)
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
