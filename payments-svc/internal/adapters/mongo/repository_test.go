package mongo_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/payments-svc/internal/adapters/mongo"
	"rentalplatform/payments-svc/internal/domain"
)

// The adapter's mapping and queries on the embedded store (or MONGODB_URI's server); the
// versioned writes beneath them are docstore's, tested by its contract suite.

func ptr[T any](v T) *T { return &v }

var t0 = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

func newRequest(t *testing.T, id, account, agreement string) *domain.Request {
	t.Helper()
	r, err := domain.NewRequest(domain.NewRequestParams{ID: id, Account: account, Created: t0, Agreement: agreement,
		Amount: ptr(int64(100)), Currency: ptr("eur"), Description: ptr("rent"), Metadata: map[string]string{"a.b": "$x"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRequestsRoundTripAndQueries(t *testing.T) {
	db := servicetest.Store(t)
	repo := mongo.NewRequests(db, outboxtest.NewRelay(&outboxtest.Queue{}), nil)
	if err := repo.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ids := []string{"preq_01", "preq_02", "preq_03", "preq_04"}
	var rs []*domain.Request
	for i, id := range ids {
		account := "acct_1"
		if i == 3 {
			account = "acct_2"
		}
		rs = append(rs, newRequest(t, id, account, "pa_"+string(rune('a'+i%2))))
	}
	if _, err := repo.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	// preq_02: attempt 1 failed, retry due in 24 h; preq_03: claimed long ago.
	if _, err := repo.Update(ctx, "preq_02", "acct_1", false, func(r *domain.Request) error {
		if _, err := r.ClaimAttempt(1, "tok", t0, time.Minute); err != nil {
			return err
		}
		_, err := r.Record(1, "tok", []domain.Try{{Attempt: 1, Method: "pm_1", FailureCode: "insufficient_funds", At: t0}}, true)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Update(ctx, "preq_03", "acct_1", false, func(r *domain.Request) error {
		_, err := r.ClaimAttempt(1, "tok", t0, time.Minute)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got, err := repo.Get(ctx, "preq_02", "acct_1", false)
	if err != nil {
		t.Fatal(err)
	}
	want := rs[1].State()
	s := got.State()
	if s.Status != domain.StatusProcessing || s.Attempts != 1 || len(s.Tries) != 1 || s.Tries[0].FailureCode != "insufficient_funds" ||
		!s.NextRetryAt.Equal(t0.Add(24*time.Hour)) || s.NextAttempt != 2 || s.Metadata["a.b"] != "$x" || s.Amount != want.Amount || s.Claim != nil {
		t.Fatalf("round trip: %+v", s)
	}
	if _, err := repo.Get(ctx, "preq_02", "acct_2", false); err == nil {
		t.Fatal("another account reads the request")
	}
	if _, err := repo.Get(ctx, "preq_02", "acct_1", true); err == nil {
		t.Fatal("live mode reads a test request")
	}

	list := func(f domain.RequestFilter) []string {
		t.Helper()
		page, _, err := repo.List(ctx, "acct_1", false, f, listing.Params{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range page {
			out = append(out, r.ID())
		}
		return out
	}
	for _, tc := range []struct {
		f    domain.RequestFilter
		want string
	}{
		{domain.RequestFilter{}, "[preq_03 preq_02 preq_01]"},
		{domain.RequestFilter{Agreement: "pa_a"}, "[preq_03 preq_01]"},
		{domain.RequestFilter{Status: domain.StatusProcessing}, "[preq_03 preq_02]"},
		{domain.RequestFilter{Agreement: "pa_b", Status: domain.StatusProcessing}, "[preq_02]"},
		{domain.RequestFilter{Status: domain.StatusFailed}, "[]"},
	} {
		if got := list(tc.f); fmt.Sprint(got) != tc.want {
			t.Errorf("List(%+v) = %v; want %s", tc.f, got, tc.want)
		}
	}

	// The reconciler's queries: preq_01 and preq_04 are due (attempt 1 at t0), preq_02 is not
	// due until t0+24h, preq_03's claim is stale after a minute.
	overdue := func(dueBefore, claimedBefore time.Time) string {
		t.Helper()
		rs, err := repo.Overdue(ctx, dueBefore, claimedBefore, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.ID())
		}
		return fmt.Sprint(slices.Sorted(slices.Values(out)))
	}
	if got := overdue(t0.Add(time.Second), t0.Add(-time.Second)); got != "[preq_01 preq_04]" {
		t.Errorf("overdue, claims fresh = %s", got)
	}
	if got := overdue(t0.Add(25*time.Hour), t0.Add(time.Second)); got != "[preq_01 preq_02 preq_03 preq_04]" {
		t.Errorf("overdue a day later = %s", got)
	}
	open, err := repo.Open(ctx, "preq_01", 2)
	if err != nil || len(open) != 2 || open[0].ID() != "preq_02" || open[1].ID() != "preq_03" {
		t.Fatalf("Open after preq_01 = %v, %v", open, err)
	}
	forA, err := repo.OpenFor(ctx, "pa_a")
	if err != nil || len(forA) != 2 {
		t.Fatalf("OpenFor(pa_a) = %v, %v", forA, err)
	}
}

// Every list filter and the reconciler's queries are backed by an index on MongoDB (the
// embedded store does not use them, so their definitions are what is checked).
func TestIndexDefinitions(t *testing.T) {
	keys := func(k any) string {
		var out []string
		for _, e := range k.(bson.D) {
			out = append(out, e.Key)
		}
		return fmt.Sprint(out)
	}
	var got []string
	for _, m := range mongo.RequestIndexes() {
		got = append(got, keys(m.Keys))
	}
	for _, m := range mongo.AgreementIndexes() {
		got = append(got, keys(m.Keys))
	}
	want := []string{
		"[account livemode _id]",
		"[account livemode payment_agreement _id]",
		"[account livemode status _id]",
		"[account livemode payment_agreement status _id]",
		"[payment_agreement status]",
		"[status due_at]",
		"[status claim.at]",
		"[status _id]",
		"[account livemode _id]",
		"[account livemode status _id]",
		"[cascading]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("indexes %v\nwant %v", got, want)
	}
}

// A charge's id is stored with it; a charge stored without one (as before charges had ids)
// reads back with its derived id, the same on every read.
func TestChargeIDsRoundTrip(t *testing.T) {
	repo := mongo.NewRequests(servicetest.Store(t), outboxtest.NewRelay(&outboxtest.Queue{}), nil)
	ctx := t.Context()
	if _, err := repo.Create(ctx, []*domain.Request{newRequest(t, "preq_01", "acct_1", "pa_a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Update(ctx, "preq_01", "acct_1", false, func(r *domain.Request) error {
		if _, err := r.ClaimAttempt(1, "tok", t0, time.Minute); err != nil {
			return err
		}
		_, err := r.Record(1, "tok", []domain.Try{
			{ID: "ch_01", Attempt: 1, Method: "pm_1", FailureCode: "insufficient_funds", At: t0},
			{Attempt: 1, Method: "pm_2", Succeeded: true, At: t0},
		}, true)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ch_01", domain.ChargeID("preq_01", 1, "pm_2")}
	for range 2 {
		got, err := repo.Get(ctx, "preq_01", "acct_1", false)
		if err != nil {
			t.Fatal(err)
		}
		tries := got.Tries()
		if len(tries) != 2 || tries[0].ID != want[0] || tries[1].ID != want[1] {
			t.Fatalf("charges read back %+v; want ids %v", tries, want)
		}
	}
}

// A request stored before its attempt log was packed (as an array of subdocuments, charges
// without ids) reads the same, and its next write packs the log.
func TestAttemptLogStoredAsAnArray(t *testing.T) {
	ctx := t.Context()
	store := servicetest.Store(t)
	repo := mongo.NewRequests(store, outboxtest.NewRelay(&outboxtest.Queue{}), nil)
	if _, err := store.Collection(mongo.RequestsCollection).InsertOne(ctx, bson.D{
		{Key: "_id", Value: "preq_old"}, {Key: "version", Value: int64(1)}, {Key: "account", Value: "acct_1"}, {Key: "livemode", Value: false},
		{Key: "payment_agreement", Value: "pa_a"}, {Key: "amount", Value: int64(100)}, {Key: "currency", Value: "eur"},
		{Key: "metadata", Value: bson.A{}}, {Key: "created", Value: t0.Unix()}, {Key: "status", Value: "failed"}, {Key: "attempts", Value: 1},
		{Key: "attempt_log", Value: bson.A{
			bson.D{{Key: "attempt", Value: 1}, {Key: "payment_method", Value: "pm_1"}, {Key: "succeeded", Value: false}, {Key: "failure_code", Value: "insufficient_funds"}, {Key: "at", Value: t0}},
		}},
	}); err != nil {
		t.Fatal(err)
	}
	want := domain.Try{ID: domain.ChargeID("preq_old", 1, "pm_1"), Attempt: 1, Method: "pm_1", FailureCode: "insufficient_funds", At: t0}
	got, err := repo.Get(ctx, "preq_old", "acct_1", false)
	if err != nil || !slices.Equal(got.Tries(), []domain.Try{want}) {
		t.Fatalf("Get = %+v, %v; want the charge %+v", got, err, want)
	}
	if _, err := repo.Update(ctx, "preq_old", "acct_1", false, func(r *domain.Request) error { return nil }); err != nil {
		t.Fatal(err)
	}
	stored, err := store.Collection(mongo.RequestsCollection).FindOne(ctx, bson.D{{Key: "_id", Value: "preq_old"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if typ := stored.Lookup("attempt_log").Type; typ != bson.TypeBinary {
		t.Fatalf("rewritten attempt_log stored as %s, want packed", typ)
	}
	if got, err = repo.Get(ctx, "preq_old", "acct_1", false); err != nil || !slices.Equal(got.Tries(), []domain.Try{want}) {
		t.Fatalf("after the rewrite: %+v, %v", got.Tries(), err)
	}
}
