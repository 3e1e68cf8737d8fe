package mongo_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/servicetest"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/domain"
)

// deliveryOf stores a delivery of event to endpoint ("" for an event's own destination),
// created at created, moved to status, and returns its id.
func deliveryOf(t *testing.T, repo *mongo.Deliveries, gen *ids.Generator, account string, livemode bool,
	endpoint, event string, status domain.DeliveryStatus, created time.Time) string {
	t.Helper()
	d := domain.NewDelivery(domain.NewDeliveryParams{
		ID: gen.New(domain.DeliveryIDPrefix), Event: event, Endpoint: endpoint, Account: account, Livemode: livemode,
		EventCreated: created, Created: created,
	})
	if ok, err := repo.Create(t.Context(), d); !ok || err != nil {
		t.Fatalf("Create = %v, %v", ok, err)
	}
	if status == domain.DeliveryPending {
		return d.ID()
	}
	answer := map[domain.DeliveryStatus]int{domain.DeliverySucceeded: 200, domain.DeliveryFailed: 410}[status]
	if _, err := repo.UpdateAny(t.Context(), d.ID(), func(d *domain.Delivery) error {
		_, err := d.Record(1, domain.Result{At: created, Status: answer}, domain.Schedule{time.Minute}, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return d.ID()
}

// List selects the account's deliveries in the mode by every combination of its filters and
// created bounds, newest first, and pages through them in both directions.
func TestDeliveryList(t *testing.T) {
	t.Parallel()
	repo := mongo.NewDeliveries(servicetest.Store(t))
	if _, err := repo.EnsureIndexes(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	gen := ids.NewGenerator(nil)
	account := gen.New(ids.Account)
	epA, epB := gen.New(ids.WebhookEndpoint), gen.New(ids.WebhookEndpoint)
	ev1, ev2, ev3 := gen.New(ids.Event), gen.New(ids.Event), gen.New(ids.Event)
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	sec := func(n int64) *int64 { v := base.Unix() + n; return &v }
	own := func(endpoint, event string, status domain.DeliveryStatus, created time.Time) string {
		return deliveryOf(t, repo, gen, account, false, endpoint, event, status, created)
	}
	// Oldest first; created within whole seconds, as the API shows it, and between them.
	d0 := own(epA, ev1, domain.DeliverySucceeded, base)
	d1 := own(epB, ev1, domain.DeliveryFailed, base.Add(1500*time.Millisecond))
	d2 := own(epA, ev2, domain.DeliveryPending, base.Add(2*time.Second))
	d3 := own("", ev3, domain.DeliverySucceeded, base.Add(3*time.Second)) // to the event's destination
	d4 := own(epB, ev2, domain.DeliverySucceeded, base.Add(3999*time.Millisecond))
	// The same endpoint in the other mode, and another account's deliveries to an endpoint of
	// the same id: never listed for the account in test mode.
	live := deliveryOf(t, repo, gen, account, true, epA, gen.New(ids.Event), domain.DeliveryPending, base)
	foreign := gen.New(ids.Account)
	other := deliveryOf(t, repo, gen, foreign, false, epA, gen.New(ids.Event), domain.DeliverySucceeded, base)

	all := []string{d4, d3, d2, d1, d0}
	for _, tc := range []struct {
		name     string
		account  string
		livemode bool
		f        domain.DeliveryFilter
		p        listing.Params
		want     []string
		more     bool
	}{
		{name: "all", want: all},
		{name: "endpoint A", f: domain.DeliveryFilter{Endpoint: epA}, want: []string{d2, d0}},
		{name: "endpoint B", f: domain.DeliveryFilter{Endpoint: epB}, want: []string{d4, d1}},
		{name: "endpoint unknown", f: domain.DeliveryFilter{Endpoint: gen.New(ids.WebhookEndpoint)}},
		{name: "event 1", f: domain.DeliveryFilter{Event: ev1}, want: []string{d1, d0}},
		{name: "event 3 (destination)", f: domain.DeliveryFilter{Event: ev3}, want: []string{d3}},
		{name: "succeeded", f: domain.DeliveryFilter{Status: domain.DeliverySucceeded}, want: []string{d4, d3, d0}},
		{name: "failed", f: domain.DeliveryFilter{Status: domain.DeliveryFailed}, want: []string{d1}},
		{name: "pending", f: domain.DeliveryFilter{Status: domain.DeliveryPending}, want: []string{d2}},
		{name: "endpoint and status", f: domain.DeliveryFilter{Endpoint: epB, Status: domain.DeliverySucceeded}, want: []string{d4}},
		{name: "endpoint and event", f: domain.DeliveryFilter{Endpoint: epA, Event: ev2}, want: []string{d2}},
		{name: "all three", f: domain.DeliveryFilter{Endpoint: epA, Event: ev2, Status: domain.DeliveryPending}, want: []string{d2}},
		{name: "all three, none match", f: domain.DeliveryFilter{Endpoint: epA, Event: ev2, Status: domain.DeliverySucceeded}},
		{name: "created gte", p: listing.Params{CreatedGTE: sec(1)}, want: []string{d4, d3, d2, d1}},
		{name: "created lte takes its whole second", p: listing.Params{CreatedLTE: sec(1)}, want: []string{d1, d0}},
		{name: "created within one second", p: listing.Params{CreatedGTE: sec(3), CreatedLTE: sec(3)}, want: []string{d4, d3}},
		{name: "created and a filter", f: domain.DeliveryFilter{Endpoint: epA}, p: listing.Params{CreatedGTE: sec(1)}, want: []string{d2}},
		{name: "created gte beyond any date", p: listing.Params{CreatedGTE: ptr(int64(math.MaxInt64))}},
		{name: "created lte beyond any date", p: listing.Params{CreatedLTE: ptr(int64(math.MaxInt64))}, want: all},
		{name: "created from 0", p: listing.Params{CreatedGTE: ptr(int64(0))}, want: all},
		{name: "first page", p: listing.Params{Limit: 2}, want: []string{d4, d3}, more: true},
		{name: "next page", p: listing.Params{Limit: 2, StartingAfter: d3}, want: []string{d2, d1}, more: true},
		{name: "last page", p: listing.Params{Limit: 2, StartingAfter: d1}, want: []string{d0}},
		{name: "page before", p: listing.Params{Limit: 2, EndingBefore: d1}, want: []string{d3, d2}, more: true},
		{name: "first page, backwards", p: listing.Params{Limit: 2, EndingBefore: d2}, want: []string{d4, d3}},
		{name: "filtered page", f: domain.DeliveryFilter{Status: domain.DeliverySucceeded}, p: listing.Params{Limit: 1, StartingAfter: d4},
			want: []string{d3}, more: true},
		{name: "other mode", livemode: true, want: []string{live}},
		{name: "other mode, by endpoint", livemode: true, f: domain.DeliveryFilter{Endpoint: epA}, want: []string{live}},
		{name: "other account", account: foreign, want: []string{other}},
		{name: "other account, by its own filters", account: foreign, f: domain.DeliveryFilter{Endpoint: epA, Status: domain.DeliverySucceeded}, want: []string{other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.account == "" {
				tc.account = account
			}
			if tc.p.Limit == 0 {
				tc.p.Limit = 10
			}
			page, more, err := repo.List(t.Context(), tc.account, tc.livemode, tc.f, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range page {
				got = append(got, d.ID())
			}
			if !slices.Equal(got, tc.want) || more != tc.more {
				t.Fatalf("got %v (has_more %v), want %v (%v)", got, more, tc.want, tc.more)
			}
		})
	}

	// What a page holds is the delivery as stored, mapped back whole.
	page, _, err := repo.List(t.Context(), account, false, domain.DeliveryFilter{Endpoint: epB, Status: domain.DeliveryFailed}, listing.Params{Limit: 10})
	if err != nil || len(page) != 1 {
		t.Fatalf("List = %v, %v", page, err)
	}
	if d := page[0]; d.Event() != ev1 || d.Endpoint() != epB || d.Account() != account || d.Livemode() ||
		!d.Created().Equal(base.Add(1500*time.Millisecond)) || len(d.Attempts()) != 1 || d.Attempts()[0].Status != 410 {
		t.Fatalf("listed delivery %+v", d.State())
	}
}

func ptr[T any](v T) *T { return &v }

// Deliveries created while a client pages through the list never break a page: every one
// created before the listing started is listed exactly once, newest first.
func TestDeliveryListWhileCreating(t *testing.T) {
	t.Parallel()
	repo := mongo.NewDeliveries(servicetest.Store(t))
	gen := ids.NewGenerator(nil)
	account, endpoint := gen.New(ids.Account), gen.New(ids.WebhookEndpoint)
	var before []string
	for range 30 {
		before = append(before, deliveryOf(t, repo, gen, account, false, endpoint, gen.New(ids.Event), domain.DeliveryPending, time.Now()))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				d := domain.NewDelivery(domain.NewDeliveryParams{ID: gen.New(domain.DeliveryIDPrefix), Event: gen.New(ids.Event),
					Endpoint: endpoint, Account: account, EventCreated: time.Now(), Created: time.Now()})
				if _, err := repo.Create(t.Context(), d); err != nil {
					t.Error(err)
				}
			}
		})
	}
	var listed []string
	p := listing.Params{Limit: 7}
	for {
		page, more, err := repo.List(t.Context(), account, false, domain.DeliveryFilter{Endpoint: endpoint}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			listed = append(listed, d.ID())
		}
		if !more {
			break
		}
		p.StartingAfter = page[len(page)-1].ID()
	}
	wg.Wait()
	if !slices.IsSortedFunc(listed, func(a, b string) int { return strings.Compare(b, a) }) || len(slices.Compact(slices.Clone(listed))) != len(listed) {
		t.Fatalf("pages are not newest first without repeats: %v", listed)
	}
	for _, id := range before {
		if !slices.Contains(listed, id) {
			t.Fatalf("%s, created before the listing, is missing", id)
		}
	}
}

// Every filter of List, and the newest-first order, is backed by an index on MongoDB: account
// and mode, the filter's field, _id descending. The embedded store creates only the unique
// index (it cannot use the others), so the definitions are checked here, and then what the
// server holds: every one on MongoDB, the unique one on the embedded store.
func TestDeliveryIndexDefinitions(t *testing.T) {
	t.Parallel()
	keys := func(k any) string {
		var out []string
		for _, e := range k.(bson.D) {
			out = append(out, fmt.Sprintf("%s:%v", e.Key, e.Value))
		}
		return fmt.Sprint(out)
	}
	var got []string
	for _, m := range mongo.DeliveryIndexes() {
		got = append(got, keys(m.Keys))
	}
	want := []string{
		"[event:1 endpoint:1]",
		"[account:1 livemode:1 _id:-1]",
		"[account:1 livemode:1 event:1 _id:-1]",
		"[account:1 livemode:1 endpoint:1 _id:-1]",
		"[account:1 livemode:1 status:1 _id:-1]",
		"[account:1 livemode:1 created:1 _id:-1]",
		"[endpoint:1 status:1]",
		"[status:1 next_attempt_at:1]",
		"[event_created_at:1]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("indexes %v\nwant %v", got, want)
	}

	db := servicetest.Store(t)
	if _, err := mongo.NewDeliveries(db).EnsureIndexes(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	onServer := servicetest.IndexNames(t, db, mongo.DeliveriesCollection)
	if !slices.Contains(onServer, "event_endpoint") {
		t.Fatalf("the unique (event, endpoint) index is missing: %v", onServer)
	}
	if db.MultiProcess() { // MongoDB: every declared index exists
		for _, n := range []string{"account_livemode_id", "account_livemode_event_id", "account_livemode_endpoint_id",
			"account_livemode_status_id", "account_livemode_created_id"} {
			if !slices.Contains(onServer, n) {
				t.Errorf("index %s missing: %v", n, onServer)
			}
		}
	}
}
