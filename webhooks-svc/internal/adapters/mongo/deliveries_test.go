package mongo_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/servicetest"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/domain"
)

type deliveryFixture struct {
	t       *testing.T
	repo    *mongo.Deliveries
	gen     *ids.Generator
	account string
}

func newDeliveryFixture(t *testing.T, repo *mongo.Deliveries) *deliveryFixture {
	gen := ids.NewGenerator(nil)
	return &deliveryFixture{t: t, repo: repo, gen: gen, account: gen.New(ids.Account)}
}

func (f *deliveryFixture) create(event, endpoint string, eventCreated time.Time) *domain.Delivery {
	f.t.Helper()
	d := domain.NewDelivery(domain.NewDeliveryParams{
		ID: f.gen.New(domain.DeliveryIDPrefix), Event: event, Endpoint: endpoint, Account: f.account,
		EventCreated: eventCreated, Created: time.Now(),
	})
	if ok, err := f.repo.Create(f.t.Context(), d); !ok || err != nil {
		f.t.Fatalf("Create = %v, %v", ok, err)
	}
	return d
}

func TestDeliveryStore(t *testing.T) {
	t.Parallel()
	repo := mongo.NewDeliveries(servicetest.Store(t))
	if _, err := repo.EnsureIndexes(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.EnsureIndexes(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	t.Run("one delivery per event and endpoint", func(t *testing.T) {
		t.Parallel()
		f := newDeliveryFixture(t, repo)
		d := f.create("evt_a"+f.gen.New(""), "we_1", time.Now())
		if ok, err := repo.Create(ctx, d); ok || err != nil {
			t.Fatalf("same delivery again: %v, %v", ok, err)
		}
		other := domain.NewDelivery(domain.NewDeliveryParams{ID: f.gen.New(domain.DeliveryIDPrefix), Event: d.Event(),
			Endpoint: d.Endpoint(), Account: f.account, EventCreated: time.Now(), Created: time.Now()})
		if ok, err := repo.Create(ctx, other); ok || err != nil {
			t.Fatalf("another delivery of the same event to the same endpoint: %v, %v", ok, err)
		}
		if _, err := repo.Load(ctx, other.ID()); !errors.Is(err, domain.ErrDeliveryNotFound) {
			t.Fatalf("the refused delivery was stored: %v", err)
		}
		if got, err := repo.Get(ctx, d.ID(), f.account, false); err != nil || got.ID() != d.ID() {
			t.Fatalf("Get by its owner = %v, %v", got, err)
		}
		if _, err := repo.Get(ctx, d.ID(), "acct_other", false); !errors.Is(err, domain.ErrDeliveryNotFound) {
			t.Fatalf("Get by another account: %v", err)
		}
		if _, err := repo.Update(ctx, d.ID(), f.account, true, func(*domain.Delivery) error { return nil }); !errors.Is(err, domain.ErrDeliveryNotFound) {
			t.Fatalf("Update in the other mode: %v", err)
		}
	})

	t.Run("CreateAll stores the new and reports the existing", func(t *testing.T) {
		t.Parallel()
		f := newDeliveryFixture(t, repo)
		event := "evt_" + f.gen.New("")
		existing := f.create(event, "we_1", time.Now())
		mk := func(endpoint string) *domain.Delivery {
			return domain.NewDelivery(domain.NewDeliveryParams{ID: f.gen.New(domain.DeliveryIDPrefix), Event: event,
				Endpoint: endpoint, Account: f.account, EventCreated: time.Now(), Created: time.Now()})
		}
		batch := []*domain.Delivery{mk("we_0"), existing, mk("we_1") /* twin of existing */, mk("we_2")}
		got, err := repo.CreateAll(ctx, batch)
		if err != nil || !slices.Equal(got, []bool{true, false, false, true}) {
			t.Fatalf("CreateAll = %v, %v", got, err)
		}
		for i, d := range batch {
			_, err := repo.Load(ctx, d.ID())
			if stored := err == nil; stored != (i != 2) {
				t.Errorf("delivery %d stored: %v (%v)", i, stored, err)
			}
		}
	})

	t.Run("attempts and schedule round-trip", func(t *testing.T) {
		t.Parallel()
		f := newDeliveryFixture(t, repo)
		d := f.create("evt_"+f.gen.New(""), "we_1", time.Now())
		at := time.Now().Truncate(time.Millisecond)
		got, err := repo.UpdateAny(ctx, d.ID(), func(d *domain.Delivery) error {
			_, err := d.Record(1, domain.Result{At: at, Duration: 12 * time.Millisecond, Status: 500}, domain.Schedule{time.Minute}, 0.5)
			if err != nil {
				return err
			}
			_, err = d.Record(2, domain.Result{At: at, Duration: 3 * time.Millisecond, ErrorCode: domain.AttemptConnectionRefused, Cause: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}, domain.Schedule{time.Minute}, 0.5)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := repo.Load(ctx, d.ID())
		if err != nil {
			t.Fatal(err)
		}
		want := []domain.Attempt{
			{At: at, Duration: 12 * time.Millisecond, Status: 500, ErrorCode: domain.AttemptHTTPStatus},
			{At: at, Duration: 3 * time.Millisecond, ErrorCode: domain.AttemptConnectionRefused},
		}
		if got.Status() != domain.DeliveryFailed || stored.Status() != domain.DeliveryFailed ||
			!slices.EqualFunc(stored.Attempts(), want, func(a, b domain.Attempt) bool {
				return a.At.Equal(b.At) && a.Duration == b.Duration && a.Status == b.Status && a.ErrorCode == b.ErrorCode
			}) || !stored.NextAttemptAt().IsZero() {
			t.Fatalf("stored %+v", stored.State())
		}
	})

	t.Run("parallel updates all apply", func(t *testing.T) {
		t.Parallel()
		f := newDeliveryFixture(t, repo)
		d := f.create("evt_"+f.gen.New(""), "we_1", time.Now())
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := repo.UpdateAny(ctx, d.ID(), func(d *domain.Delivery) error { d.Retry(time.Now()); return nil }); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got, _ := repo.Load(ctx, d.ID()); got.Seq() != 9 {
			t.Fatalf("seq %d after 8 concurrent retries, want 9", got.Seq())
		}
	})

	t.Run("lists, pending and overdue", func(t *testing.T) {
		t.Parallel()
		f := newDeliveryFixture(t, repo)
		ev, ep := "evt_"+f.gen.New(""), "we_"+f.gen.New("")
		var newestFirst []string
		for range 12 {
			newestFirst = slices.Insert(newestFirst, 0, f.create(ev, "we_"+f.gen.New(""), time.Now()).ID())
		}
		toEp := f.create("evt_"+f.gen.New(""), ep, time.Now())
		newDeliveryFixture(t, repo).create(ev, "we_foreign", time.Now()) // another account
		page, more, err := repo.List(ctx, f.account, false, domain.DeliveryFilter{Event: ev}, listing.Params{Limit: 10})
		if err != nil || !more || len(page) != 10 || page[0].ID() != newestFirst[0] {
			t.Fatalf("List by event: %d, %v, %v", len(page), more, err)
		}
		page, more, err = repo.List(ctx, f.account, false, domain.DeliveryFilter{Event: ev}, listing.Params{Limit: 10, StartingAfter: page[9].ID()})
		if err != nil || more || len(page) != 2 || page[1].ID() != newestFirst[11] {
			t.Fatalf("List by event, page 2: %d, %v, %v", len(page), more, err)
		}
		if page, _, _ := repo.List(ctx, f.account, true, domain.DeliveryFilter{Event: ev}, listing.Params{Limit: 10}); len(page) != 0 {
			t.Fatal("other mode sees deliveries")
		}
		page, _, err = repo.List(ctx, f.account, false, domain.DeliveryFilter{Endpoint: ep}, listing.Params{Limit: 10})
		if err != nil || len(page) != 1 || page[0].ID() != toEp.ID() {
			t.Fatalf("List by endpoint: %v %v", page, err)
		}
		pending, err := repo.Pending(ctx, ep)
		if err != nil || len(pending) != 1 {
			t.Fatalf("Pending: %v %v", pending, err)
		}
		// Overdue: due before the cutoff, pending, with an attempt scheduled.
		if _, err := repo.UpdateAny(ctx, toEp.ID(), func(d *domain.Delivery) error { d.Park(1); return nil }); err != nil {
			t.Fatal(err)
		}
		overdue, err := repo.Overdue(ctx, time.Now().Add(time.Second), 1000)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range overdue {
			ids = append(ids, d.ID())
		}
		for _, id := range newestFirst {
			if !slices.Contains(ids, id) {
				t.Fatalf("overdue misses %s", id)
			}
		}
		if slices.Contains(ids, toEp.ID()) {
			t.Fatal("a parked delivery is overdue")
		}
		if overdue, _ := repo.Overdue(ctx, time.Now().Add(-time.Hour), 1000); len(overdue) != 0 {
			t.Fatalf("overdue an hour ago: %d", len(overdue))
		}
	})

	t.Run("purge goes by the event's creation", func(t *testing.T) {
		t.Parallel()
		repo := mongo.NewDeliveries(servicetest.Store(t))
		f := newDeliveryFixture(t, repo)
		now := time.Now().Truncate(time.Second)
		old := f.create("evt_"+f.gen.New(""), "we_1", now.Add(-2*time.Hour))
		keep := f.create("evt_"+f.gen.New(""), "we_1", now.Add(-time.Hour))
		if n, err := repo.Purge(ctx, now.Add(-90*time.Minute)); n != 1 || err != nil {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		if _, err := repo.Load(ctx, old.ID()); !errors.Is(err, domain.ErrDeliveryNotFound) {
			t.Fatalf("old delivery: %v", err)
		}
		if _, err := repo.Load(ctx, keep.ID()); err != nil {
			t.Fatalf("recent delivery: %v", err)
		}
	})
}

// TestDeliveryStoredBeforeErrorCodes: attempts stored before attempts had a code carry the
// sender's own error text, which can name the platform's resolver and internal addresses. They
// are read by their status alone, never with that text, and a rewrite drops it.
func TestDeliveryStoredBeforeErrorCodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := servicetest.Store(t)
	repo := mongo.NewDeliveries(store)
	id := ids.NewGenerator(nil).New(domain.DeliveryIDPrefix)
	at := time.Now().UTC().Truncate(time.Millisecond)
	leaked := "dial tcp 127.0.0.1:39080: address not allowed: 127.0.0.1 is an internal address"
	if _, err := store.Collection(mongo.DeliveriesCollection).InsertOne(ctx, bson.D{
		{Key: "_id", Value: id}, {Key: "version", Value: int64(1)},
		{Key: "event", Value: "evt_1"}, {Key: "endpoint", Value: "we_1"}, {Key: "account", Value: "acct_1"},
		{Key: "livemode", Value: false}, {Key: "event_created_at", Value: at}, {Key: "created", Value: at},
		{Key: "status", Value: "pending"}, {Key: "seq", Value: 4}, {Key: "next_attempt_at", Value: at}, {Key: "failures", Value: 3},
		{Key: "attempts", Value: bson.A{
			bson.D{{Key: "at", Value: at}, {Key: "duration_ms", Value: int64(5)}, {Key: "error", Value: leaked}},
			bson.D{{Key: "at", Value: at}, {Key: "duration_ms", Value: int64(5)}, {Key: "error", Value: "lookup example.com on 10.255.255.53:53: no such host"}},
			bson.D{{Key: "at", Value: at}, {Key: "duration_ms", Value: int64(7)}, {Key: "status", Value: 503}},
		}},
	}); err != nil {
		t.Fatal(err)
	}
	d, err := repo.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.AttemptErrorCode{domain.AttemptConnectionFailed, domain.AttemptConnectionFailed, domain.AttemptHTTPStatus}
	got := d.Attempts()
	if len(got) != len(want) {
		t.Fatalf("attempts %+v", got)
	}
	for i, a := range got {
		if a.ErrorCode != want[i] {
			t.Errorf("attempt %d: %+v (%q), want %s", i, a, a.Message(), want[i])
		}
		if m := a.Message(); strings.Contains(m, "127.0.0.1") || strings.Contains(m, "10.255.255.53") || strings.Contains(m, "lookup") {
			t.Errorf("attempt %d shows the stored text: %q", i, m)
		}
	}

	// Rewriting the delivery stores codes and drops the old text (and packs the attempts, which
	// the old document held as an array).
	if _, err := repo.UpdateAny(ctx, id, func(d *domain.Delivery) error {
		if !d.Park(4) {
			return errors.New("not parked")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stored := storedPacked(t, store, mongo.DeliveriesCollection, id, "attempts")
	var doc struct {
		Attempts docstore.Packed[bson.M] `bson:"attempts"`
	}
	if err := bson.Unmarshal(stored, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Attempts) != len(want) {
		t.Fatalf("rewritten attempts %v", doc.Attempts)
	}
	for i, a := range doc.Attempts {
		if _, has := a["error"]; has || a["error_code"] != string(want[i]) {
			t.Errorf("rewritten attempt %d: %v", i, a)
		}
	}
}

// storedPacked reads the document id of coll as stored and fails the test unless its field is
// packed (docstore.Packed: one binary value).
func storedPacked(t *testing.T, store *docstore.DB, coll, id, field string) bson.Raw {
	t.Helper()
	stored, err := store.Collection(coll).FindOne(t.Context(), bson.D{{Key: "_id", Value: id}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if typ := stored.Lookup(field).Type; typ != bson.TypeBinary {
		t.Fatalf("rewritten %s stored as %s, want packed", field, typ)
	}
	return stored
}
