package mongo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/servicetest"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/domain"
)

// eventFixture makes events of one account.
type eventFixture struct {
	t       *testing.T
	repo    *mongo.Events
	gen     *ids.Generator
	account string
}

func newEventFixture(t *testing.T, repo *mongo.Events) *eventFixture {
	gen := ids.NewGenerator(nil)
	return &eventFixture{t: t, repo: repo, gen: gen, account: gen.New(ids.Account)}
}

// insert stores an event of typ created at created with n pending deliveries.
func (f *eventFixture) insert(typ string, created time.Time, livemode bool, n int) *domain.EventRecord {
	f.t.Helper()
	key := "idem"
	req := "req_1"
	ev, err := eventstest.New(f.gen, created, eventstest.Change{Type: typ, Account: f.account, Livemode: livemode,
		Object: map[string]any{"id": "obj", "nested": map[string]int{"b": 2, "a": 1}}, Previous: map[string]any{"status": "x"}})
	if err != nil {
		f.t.Fatal(err)
	}
	ev.Request = events.Request{ID: &req, IdempotencyKey: &key}
	var targets []domain.Target
	for range n {
		targets = append(targets, domain.Target{Delivery: f.gen.New(domain.DeliveryIDPrefix), Endpoint: f.gen.New(ids.WebhookEndpoint), Status: domain.DeliveryPending})
	}
	rec := domain.NewEventRecord(ev, targets)
	ok, err := f.repo.Insert(f.t.Context(), rec)
	if err != nil || !ok {
		f.t.Fatalf("Insert = %v, %v", ok, err)
	}
	return rec
}

func TestEventStore(t *testing.T) {
	t.Parallel()
	db := servicetest.Store(t)
	repo := mongo.NewEvents(db)
	ttl, err := repo.EnsureIndexes(t.Context(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A second start declares the same indexes again.
	ttl2, err := repo.EnsureIndexes(t.Context(), 2*time.Hour)
	if err != nil || ttl2 != ttl {
		t.Fatalf("second EnsureIndexes: %v, %v", ttl2, err)
	}
	ctx := t.Context()

	t.Run("insert is idempotent and keeps the event byte for byte", func(t *testing.T) {
		t.Parallel()
		f := newEventFixture(t, repo)
		rec := f.insert("payment_request.succeeded", time.Now(), false, 2)
		again := domain.NewEventRecord(rec.Event, nil)
		if ok, err := repo.Insert(ctx, again); ok || err != nil {
			t.Fatalf("second Insert = %v, %v; want false, nil", ok, err)
		}
		got, err := repo.Load(ctx, rec.Event.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(rec.Event)
		have, _ := json.Marshal(got.Event)
		if string(want) != string(have) || len(got.Targets) != 2 || got.PendingWebhooks() != 2 {
			t.Fatalf("stored\n%s\nwant\n%s\ntargets %+v", have, want, got.Targets)
		}
		if _, err := repo.Load(ctx, f.gen.New(ids.Event)); !errors.Is(err, domain.ErrEventNotFound) {
			t.Fatalf("Get of a missing event: %v", err)
		}
		if got, err := repo.Get(ctx, rec.Event.ID, rec.Event.Account, rec.Event.Livemode); err != nil || got.Event.ID != rec.Event.ID {
			t.Fatalf("Get by its owner = %v, %v", got, err)
		}
		for _, o := range []struct {
			account  string
			livemode bool
		}{{"acct_other", rec.Event.Livemode}, {rec.Event.Account, !rec.Event.Livemode}, {"", rec.Event.Livemode}} {
			if _, err := repo.Get(ctx, rec.Event.ID, o.account, o.livemode); !errors.Is(err, domain.ErrEventNotFound) {
				t.Fatalf("Get by %+v: %v; want not found", o, err)
			}
		}
	})

	t.Run("delivery statuses set concurrently all land", func(t *testing.T) {
		t.Parallel()
		f := newEventFixture(t, repo)
		rec := f.insert("payment_request.failed", time.Now(), false, 8)
		var wg sync.WaitGroup
		for i, tg := range rec.Targets {
			wg.Go(func() {
				s := domain.DeliverySucceeded
				if i == 0 {
					s = domain.DeliveryFailed
				}
				if err := repo.SetDeliveryStatus(ctx, rec.Event.ID, tg.Delivery, s); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got, _ := repo.Load(ctx, rec.Event.ID)
		if got.PendingWebhooks() != 0 || got.FailedWebhooks() != 1 || got.Event.PendingWebhooks != 0 || got.DeliverySuccess() {
			t.Fatalf("after concurrent updates: %+v", got.Targets)
		}
		if err := repo.SetDeliveryStatus(ctx, f.gen.New(ids.Event), "wd_x", domain.DeliveryFailed); !errors.Is(err, domain.ErrEventNotFound) {
			t.Fatalf("SetDeliveryStatus of a missing event: %v", err)
		}
	})

	t.Run("list filters", func(t *testing.T) {
		t.Parallel()
		f := newEventFixture(t, repo)
		base := time.Now().Add(-time.Hour).Truncate(time.Second)
		succeeded := f.insert("payment_request.succeeded", base, false, 1)
		failed := f.insert("payment_request.failed", base.Add(10*time.Second), false, 2)
		created := f.insert("webhook_endpoint.created", base.Add(20*time.Second), false, 0)
		f.insert("payment_request.succeeded", base, true, 0) // other mode
		newEventFixture(t, repo).insert("payment_request.succeeded", base, false, 0)
		if err := repo.SetDeliveryStatus(ctx, succeeded.Event.ID, succeeded.Targets[0].Delivery, domain.DeliverySucceeded); err != nil {
			t.Fatal(err)
		}
		if err := repo.SetDeliveryStatus(ctx, failed.Event.ID, failed.Targets[0].Delivery, domain.DeliverySucceeded); err != nil {
			t.Fatal(err)
		}
		yes, no := true, false
		gte, lte := base.Unix()+5, base.Unix()+15
		for _, tc := range []struct {
			name string
			f    domain.EventFilter
			p    listing.Params
			want []*domain.EventRecord
		}{
			{"all", domain.EventFilter{}, listing.Params{}, []*domain.EventRecord{created, failed, succeeded}},
			{"type", domain.EventFilter{Type: "payment_request.failed"}, listing.Params{}, []*domain.EventRecord{failed}},
			{"family", domain.EventFilter{Family: "payment_request"}, listing.Params{}, []*domain.EventRecord{failed, succeeded}},
			{"types", domain.EventFilter{Types: []string{"webhook_endpoint.created", "payment_request.succeeded"}}, listing.Params{}, []*domain.EventRecord{created, succeeded}},
			{"delivered", domain.EventFilter{DeliverySuccess: &yes}, listing.Params{}, []*domain.EventRecord{created, succeeded}},
			{"not delivered", domain.EventFilter{DeliverySuccess: &no}, listing.Params{}, []*domain.EventRecord{failed}},
			{"created", domain.EventFilter{}, listing.Params{CreatedGTE: &gte, CreatedLTE: &lte}, []*domain.EventRecord{failed}},
		} {
			tc.p.Limit = 10
			page, more, err := repo.List(ctx, f.account, false, tc.f, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, r := range page {
				got = append(got, r.Event.ID)
			}
			for _, r := range tc.want {
				want = append(want, r.Event.ID)
			}
			if !slices.Equal(got, want) || more {
				t.Errorf("%s: %v (has_more %v), want %v", tc.name, got, more, want)
			}
		}
	})

	t.Run("purge removes only what is older", func(t *testing.T) {
		t.Parallel()
		repo := mongo.NewEvents(servicetest.Store(t))
		f := newEventFixture(t, repo)
		now := time.Now().Truncate(time.Second)
		var old []string
		for i := range 3 {
			old = append(old, f.insert("payment_request.created", now.Add(-time.Duration(i+2)*time.Hour), false, 0).Event.ID)
		}
		keep := f.insert("payment_request.created", now.Add(-time.Hour), false, 0)
		n, err := repo.Purge(ctx, now.Add(-90*time.Minute))
		if err != nil || n != 3 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		for _, id := range old {
			if _, err := repo.Load(ctx, id); !errors.Is(err, domain.ErrEventNotFound) {
				t.Errorf("%s survived the purge: %v", id, err)
			}
		}
		if _, err := repo.Load(ctx, keep.Event.ID); err != nil {
			t.Fatalf("recent event purged: %v", err)
		}
	})
}

func TestEventPaging(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	t.Parallel()
	repo := mongo.NewEvents(servicetest.Store(t))
	f := newEventFixture(t, repo)
	for i := range 30 {
		f.insert(fmt.Sprintf("payment_request.%s", []string{"created", "failed", "succeeded"}[i%3]), time.Now(), false, i%2)
	}
	var seen []string
	p := listing.Params{Limit: 7}
	for {
		page, more, err := repo.List(t.Context(), f.account, false, domain.EventFilter{}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			seen = append(seen, r.Event.ID)
		}
		if !more {
			break
		}
		p.StartingAfter = page[len(page)-1].Event.ID
	}
	if len(seen) != 30 || !slices.IsSortedFunc(seen, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatalf("paged %d events, newest first: %v", len(seen), seen)
	}
}

// Unfanned finds the records whose deliveries are not all stored, created before the time
// given, oldest first; a record with no target, or one set fanned out, is never among them.
func TestEventsUnfanned(t *testing.T) {
	t.Parallel()
	db := servicetest.Store(t)
	repo := mongo.NewEvents(db)
	if _, err := repo.EnsureIndexes(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	f := newEventFixture(t, repo)
	now := time.Now().Truncate(time.Second)
	older := f.insert("payment_request.failed", now.Add(-3*time.Minute), false, 2)
	old := f.insert("payment_request.failed", now.Add(-2*time.Minute), true, 1)
	done := f.insert("payment_request.failed", now.Add(-2*time.Minute), false, 1)
	f.insert("payment_request.failed", now.Add(-2*time.Minute), false, 0) // nothing to fan out
	f.insert("payment_request.failed", now, false, 1)                     // within the grace
	if err := repo.SetFannedOut(t.Context(), done.Event.ID, map[string]domain.DeliveryStatus{done.Targets[0].Delivery: domain.DeliverySucceeded}); err != nil {
		t.Fatal(err)
	}
	got, err := repo.Unfanned(t.Context(), now.Add(-time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.Event.ID)
		if r.FannedOut || len(r.Targets) == 0 {
			t.Errorf("%s: %+v", r.Event.ID, r)
		}
	}
	if want := []string{older.Event.ID, old.Event.ID}; !slices.Equal(ids, want) {
		t.Fatalf("Unfanned = %v; want %v (oldest first)", ids, want)
	}
	if got, _ := repo.Unfanned(t.Context(), now.Add(-time.Minute), 1); len(got) != 1 || got[0].Event.ID != older.Event.ID {
		t.Fatalf("Unfanned with limit 1 = %v", got)
	}
	rec, err := repo.Load(t.Context(), done.Event.ID)
	if err != nil || !rec.FannedOut || rec.PendingWebhooks() != 0 || !rec.DeliverySuccess() {
		t.Fatalf("after SetFannedOut: %+v %v", rec, err)
	}
}

// TestEventTargetsStoredAsAnArray: events stored before their targets were packed (as an array
// of subdocuments) read the same, and their next write packs them.
func TestEventTargetsStoredAsAnArray(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := servicetest.Store(t)
	repo := mongo.NewEvents(store)
	gen := ids.NewGenerator(nil)
	id, d1, d2 := gen.New(ids.Event), gen.New(domain.DeliveryIDPrefix), gen.New(domain.DeliveryIDPrefix)
	created := time.Now().UTC().Truncate(time.Second)
	if _, err := store.Collection(mongo.EventsCollection).InsertOne(ctx, bson.D{
		{Key: "_id", Value: id}, {Key: "version", Value: int64(1)}, {Key: "id", Value: id},
		{Key: "type", Value: "payment_request.failed"}, {Key: "account", Value: "acct_1"}, {Key: "api_version", Value: "2024-06-01"},
		{Key: "created", Value: created.Unix()}, {Key: "livemode", Value: false}, {Key: "object", Value: `{"id":"pr_1"}`},
		{Key: "family", Value: "payment_request"}, {Key: "created_at", Value: created},
		{Key: "targets", Value: bson.A{
			bson.D{{Key: "delivery", Value: d1}, {Key: "endpoint", Value: "we_1"}, {Key: "status", Value: "succeeded"}},
			bson.D{{Key: "delivery", Value: d2}, {Key: "endpoint", Value: "we_2"}, {Key: "status", Value: "pending"}},
		}},
		{Key: "pending_webhooks", Value: 1}, {Key: "delivery_success", Value: false}, {Key: "fanned_out", Value: true},
	}); err != nil {
		t.Fatal(err)
	}
	want := []domain.Target{
		{Delivery: d1, Endpoint: "we_1", Status: domain.DeliverySucceeded},
		{Delivery: d2, Endpoint: "we_2", Status: domain.DeliveryPending},
	}
	rec, err := repo.Load(ctx, id)
	if err != nil || !slices.Equal(rec.Targets, want) || rec.PendingWebhooks() != 1 {
		t.Fatalf("Load = %+v, %v; want targets %+v", rec, err, want)
	}

	if err := repo.SetDeliveryStatus(ctx, id, d2, domain.DeliverySucceeded); err != nil {
		t.Fatal(err)
	}
	storedPacked(t, store, mongo.EventsCollection, id, "targets")
	want[1].Status = domain.DeliverySucceeded
	if rec, err = repo.Load(ctx, id); err != nil || !slices.Equal(rec.Targets, want) || rec.PendingWebhooks() != 0 || !rec.DeliverySuccess() {
		t.Fatalf("after the rewrite: %+v, %v", rec, err)
	}
}
