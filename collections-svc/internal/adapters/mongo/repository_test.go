package mongo_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/collections-svc/internal/adapters/mongo"
	"rentalplatform/collections-svc/internal/app"
	"rentalplatform/collections-svc/internal/domain"
)

// The adapter's mapping and queries on the embedded store (or MONGODB_URI's server); the
// versioned writes beneath them are docstore's, tested by its contract suite.

func ptr[T any](v T) *T { return &v }

var t0 = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

type caseOpt func(*domain.NewCaseParams)

func newCase(t *testing.T, g *ids.Generator, account string, livemode bool, ref string, opts ...caseOpt) *domain.Case {
	t.Helper()
	p := domain.NewCaseParams{
		ID: g.NewUUIDv7(ids.CollectionCase), Account: account, Livemode: livemode, Reference: ref, Created: t0,
		Partner:         domain.Partner{Name: "P", Email: "p@example.com", Phone: "+15555550100", Site: "https://p.example.com"},
		AmountToRecover: ptr(int64(5000)), Currency: ptr("eur"),
		Debtor: &domain.DebtorParams{Type: ptr("private"), Name: ptr("Bob"), Email: ptr("bob@example.com"),
			Address: &domain.AddressParams{Line1: ptr("1 St"), City: ptr("Berlin"), PostalCode: ptr("10115"), Country: ptr("DE")}, Country: ptr("DE")},
		DueDate: ptr("2026-01-31"), Metadata: map[string]string{"a.b": "$x"},
	}
	for _, o := range opts {
		o(&p)
	}
	c, err := domain.NewCase(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCasesRoundTripAndQueries(t *testing.T) {
	db := servicetest.Store(t)
	repo := mongo.NewCases(db, outboxtest.NewRelay(&outboxtest.Queue{}), nil)
	ctx := t.Context()
	if err := repo.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	g := ids.NewGenerator(nil)
	c := newCase(t, g, "acct_1", false, "DC-000001", func(p *domain.NewCaseParams) { p.CreditorReference = ptr("INV-1") })
	if _, err := repo.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := repo.Get(ctx, c.ID(), "acct_1", false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", got.State()) != fmt.Sprintf("%+v", c.State()) {
		t.Fatalf("round trip:\n%+v\n%+v", got.State(), c.State())
	}
	if byRef, err := repo.GetByReference(ctx, "DC-000001", "acct_1", false); err != nil || byRef.ID() != c.ID() {
		t.Fatalf("by reference: %v", err)
	}
	for _, scope := range []struct {
		account string
		live    bool
	}{{"acct_2", false}, {"acct_1", true}} {
		if _, err := repo.Get(ctx, c.ID(), scope.account, scope.live); !errors.Is(err, domain.ErrCaseNotFound) {
			t.Errorf("%v reads the case: %v", scope, err)
		}
		if _, err := repo.GetByReference(ctx, "DC-000001", scope.account, scope.live); !errors.Is(err, domain.ErrCaseNotFound) {
			t.Errorf("%v reads the case by reference: %v", scope, err)
		}
		if _, err := repo.Update(ctx, c.ID(), scope.account, scope.live, (*domain.Case).Pause); !errors.Is(err, domain.ErrCaseNotFound) {
			t.Errorf("%v changes the case: %v", scope, err)
		}
	}
	// The same reference is taken within the account and mode only.
	if _, err := repo.Create(ctx, newCase(t, g, "acct_1", false, "DC-000001")); !errors.Is(err, domain.ErrReferenceTaken) {
		t.Fatalf("a second DC-000001 in acct_1/test: %v", err)
	}
	for _, other := range []*domain.Case{newCase(t, g, "acct_2", false, "DC-000001"), newCase(t, g, "acct_1", true, "DC-000001")} {
		if _, err := repo.Create(ctx, other); err != nil {
			t.Fatalf("DC-000001 in another account or mode: %v", err)
		}
	}
	// Payments round trip.
	updated, err := repo.Update(ctx, c.ID(), "acct_1", false, func(c *domain.Case) error {
		_, err := c.RecordPayment(domain.PaymentParams{ID: "dpay_1", Key: "idem-1", Created: t0, Amount: ptr(int64(5000)), PaidAt: ptr("2026-11-01"), Reference: ptr("r")})
		return err
	})
	if err != nil || updated.Status() != domain.StatusClosed {
		t.Fatalf("pay in full: %v", err)
	}
	got, _ = repo.Get(ctx, c.ID(), "acct_1", false)
	if fmt.Sprintf("%+v", got.State()) != fmt.Sprintf("%+v", updated.State()) || len(got.Payments()) != 1 || got.Payments()[0].Key != "idem-1" {
		t.Fatalf("after payment:\n%+v\n%+v", got.State(), updated.State())
	}
}

// TestConcurrentReferences: creates racing for one reference; the unique index lets exactly
// one through and refuses the others with ErrReferenceTaken.
func TestConcurrentReferences(t *testing.T) {
	db := servicetest.Store(t)
	repo := mongo.NewCases(db, outboxtest.NewRelay(&outboxtest.Queue{}), nil)
	if err := repo.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	g := ids.NewGenerator(nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		c := newCase(t, g, "acct_race", false, "DC-RACE01")
		wg.Go(func() { _, errs[i] = repo.Create(t.Context(), c) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, domain.ErrReferenceTaken):
			t.Fatalf("create: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates got DC-RACE01", won)
	}
}

func TestCaseFilters(t *testing.T) {
	db := servicetest.Store(t)
	repo := mongo.NewCases(db, outboxtest.NewRelay(&outboxtest.Queue{}), nil)
	ctx := t.Context()
	g := ids.NewGenerator(nil)
	var all []*domain.Case
	for i := range 8 {
		c := newCase(t, g, "acct_f", false, fmt.Sprintf("DC-00000%d", i), func(p *domain.NewCaseParams) {
			p.Created = t0.Add(time.Duration(i) * time.Minute)
			if i%2 == 1 {
				p.Debtor.Type, p.Debtor.Country = ptr("company"), ptr("FR")
			}
			if i%4 == 0 {
				p.CreditorReference = ptr("INV-X")
			}
		})
		if i >= 6 {
			_ = c.Pause()
		}
		if _, err := repo.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		all = append(all, c)
	}
	if _, err := repo.Create(ctx, newCase(t, g, "acct_other", false, "DC-000009")); err != nil {
		t.Fatal(err)
	}
	name := func(cs []*domain.Case) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Reference()[len(c.Reference())-1:])
		}
		return fmt.Sprint(out)
	}
	list := func(f domain.CaseFilter, p listing.Params) (string, bool) {
		t.Helper()
		if p.Limit == 0 {
			p.Limit = 10
		}
		cs, more, err := repo.List(ctx, "acct_f", false, f, p)
		if err != nil {
			t.Fatal(err)
		}
		return name(cs), more
	}
	gte, lte := t0.Add(2*time.Minute).Unix(), t0.Add(5*time.Minute).Unix()
	for _, tc := range []struct {
		f    domain.CaseFilter
		p    listing.Params
		want string
	}{
		{domain.CaseFilter{}, listing.Params{}, "[7 6 5 4 3 2 1 0]"},
		{domain.CaseFilter{Status: domain.StatusPaused}, listing.Params{}, "[7 6]"},
		{domain.CaseFilter{DebtorCountry: "FR"}, listing.Params{}, "[7 5 3 1]"},
		{domain.CaseFilter{DebtorType: domain.DebtorPrivate}, listing.Params{}, "[6 4 2 0]"},
		{domain.CaseFilter{CreditorReference: "INV-X"}, listing.Params{}, "[4 0]"},
		{domain.CaseFilter{}, listing.Params{CreatedGTE: &gte, CreatedLTE: &lte}, "[5 4 3 2]"},
		{domain.CaseFilter{Status: domain.StatusActive, DebtorCountry: "FR"}, listing.Params{}, "[5 3 1]"},
		{domain.CaseFilter{Status: domain.StatusActive, DebtorType: domain.DebtorCompany}, listing.Params{CreatedLTE: &lte}, "[5 3 1]"},
		{domain.CaseFilter{DebtorType: domain.DebtorPrivate, CreditorReference: "INV-X", Status: domain.StatusActive, DebtorCountry: "DE"}, listing.Params{}, "[4 0]"},
		{domain.CaseFilter{DebtorCountry: "FR"}, listing.Params{Limit: 2, StartingAfter: all[5].ID()}, "[3 1]"},
		{domain.CaseFilter{DebtorCountry: "FR"}, listing.Params{Limit: 2, EndingBefore: all[1].ID()}, "[5 3]"},
		{domain.CaseFilter{Status: domain.StatusPaused}, listing.Params{Limit: 1, EndingBefore: all[0].ID()}, "[6]"},
		{domain.CaseFilter{}, listing.Params{CreatedGTE: &gte, CreatedLTE: &lte, Limit: 2, StartingAfter: all[5].ID()}, "[4 3]"},
		{domain.CaseFilter{}, listing.Params{CreatedGTE: &gte, CreatedLTE: &lte, Limit: 2, EndingBefore: all[2].ID()}, "[4 3]"},
		{domain.CaseFilter{DebtorCountry: "FR"}, listing.Params{CreatedGTE: &gte, Limit: 5, EndingBefore: all[1].ID()}, "[7 5 3]"},
		{domain.CaseFilter{CreditorReference: "INV-X"}, listing.Params{Limit: 1, StartingAfter: all[4].ID()}, "[0]"},
		{domain.CaseFilter{CreditorReference: "INV-X"}, listing.Params{Limit: 1, EndingBefore: all[0].ID()}, "[4]"},
	} {
		if got, _ := list(tc.f, tc.p); got != tc.want {
			t.Errorf("List(%+v, %+v) = %s; want %s", tc.f, tc.p, got, tc.want)
		}
	}
	if got, more := list(domain.CaseFilter{DebtorCountry: "FR"}, listing.Params{Limit: 2}); got != "[7 5]" || !more {
		t.Errorf("first page = %s, has_more %v", got, more)
	}
	if got, more := list(domain.CaseFilter{DebtorCountry: "FR"}, listing.Params{Limit: 2, StartingAfter: all[3].ID()}); got != "[1]" || more {
		t.Errorf("last page = %s, has_more %v", got, more)
	}
	if got, more := list(domain.CaseFilter{DebtorCountry: "FR"}, listing.Params{Limit: 2, EndingBefore: all[3].ID()}); got != "[7 5]" || more {
		t.Errorf("page before 3 = %s, has_more %v", got, more)
	}
}

// Every list filter, the newest-first sort and the reference lookup are backed by an index on
// MongoDB. The embedded store creates only the unique ones (it cannot use the others), so the
// definitions are checked here, and then what the server holds: all of them on MongoDB, the
// unique one on the embedded store.
func TestIndexDefinitions(t *testing.T) {
	keys := func(k any) string {
		var out []string
		for _, e := range k.(bson.D) {
			out = append(out, fmt.Sprintf("%s:%v", e.Key, e.Value))
		}
		return fmt.Sprint(out)
	}
	var got []string
	for _, m := range append(mongo.CaseIndexes(), mongo.FileIndexes()...) {
		got = append(got, keys(m.Keys))
	}
	want := []string{
		"[account:1 livemode:1 reference:1]",
		"[account:1 livemode:1 _id:-1]",
		"[account:1 livemode:1 status:1 _id:-1]",
		"[account:1 livemode:1 debtor.country:1 _id:-1]",
		"[account:1 livemode:1 debtor.type:1 _id:-1]",
		"[account:1 livemode:1 creditor_reference:1 _id:-1]",
		"[account:1 livemode:1 created:1 _id:-1]",
		"[account:1 livemode:1 collection_case:1 _id:-1]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("indexes %v\nwant %v", got, want)
	}

	db := servicetest.Store(t)
	relay := outboxtest.NewRelay(&outboxtest.Queue{})
	if err := mongo.NewCases(db, relay, nil).EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := mongo.NewFiles(db, relay, nil).EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	names := func(coll string) []string { return servicetest.IndexNames(t, db, coll) }
	onServer := names(mongo.CasesCollection)
	if !slices.Contains(onServer, "account_livemode_reference") {
		t.Fatalf("the unique reference index is missing: %v", onServer)
	}
	if db.MultiProcess() { // MongoDB: every declared index exists
		for _, n := range []string{"account_livemode_id", "account_livemode_status_id", "account_livemode_debtor_country_id",
			"account_livemode_debtor_type_id", "account_livemode_creditor_reference_id", "account_livemode_created_id"} {
			if !slices.Contains(onServer, n) {
				t.Errorf("index %s missing: %v", n, onServer)
			}
		}
		if fs := names(mongo.FilesCollection); !slices.Contains(fs, "account_livemode_case_id") {
			t.Errorf("file index missing: %v", fs)
		}
	}
}

func TestFiles(t *testing.T) {
	db := servicetest.Store(t)
	files := mongo.NewFiles(db, outboxtest.NewRelay(&outboxtest.Queue{}), nil)
	ctx := t.Context()
	g := ids.NewGenerator(nil)
	var made []*domain.File
	for i, scope := range []struct {
		c, account string
		live       bool
	}{{"dc_a", "acct_1", false}, {"dc_a", "acct_1", false}, {"dc_b", "acct_1", false}, {"dc_a", "acct_1", true}, {"dc_a", "acct_2", false}} {
		f, err := domain.NewFile(domain.NewFileParams{ID: g.New(ids.File), Account: scope.account, Livemode: scope.live, Case: scope.c,
			Created: t0, Filename: fmt.Sprintf("f%d.pdf", i), Size: int64(i), ContentType: domain.TypePDF, SHA256: "00", DocumentType: ptr("miscellaneous")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := files.Create(ctx, f); err != nil {
			t.Fatal(err)
		}
		made = append(made, f)
	}
	page, more, err := files.List(ctx, "dc_a", "acct_1", false, listing.Params{Limit: 10})
	if err != nil || more || len(page) != 2 || page[0].ID() != made[1].ID() || page[1].ID() != made[0].ID() {
		t.Fatalf("list: %v %v", page, err)
	}
	if got, err := files.Get(ctx, made[0].ID(), "dc_a", "acct_1", false); err != nil || fmt.Sprintf("%+v", got.State()) != fmt.Sprintf("%+v", made[0].State()) {
		t.Fatalf("get: %v", err)
	}
	for _, wrong := range []struct {
		c, account string
		live       bool
	}{{"dc_b", "acct_1", false}, {"dc_a", "acct_2", false}, {"dc_a", "acct_1", true}} {
		if _, err := files.Get(ctx, made[0].ID(), wrong.c, wrong.account, wrong.live); !errors.Is(err, domain.ErrFileNotFound) {
			t.Errorf("%v reads the file: %v", wrong, err)
		}
	}
}

// TestContents: the adapter's mapping of docstore.Bucket (whose layout and streaming
// docstore's TestBucket checks): a file's bytes up and back, whose they are stored beside
// them, and a missing or uncommitted content is a missing file.
func TestContents(t *testing.T) {
	db := servicetest.Store(t)
	c := mongo.NewContents(db)
	ctx := t.Context()
	if err := c.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	meta := app.ContentMeta{Account: "acct_1", Livemode: true, Case: "dc_1", Filename: "x.pdf", ContentType: domain.TypePDF}
	w, err := c.Create(ctx, "file_1", meta)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 300<<10)
	_, _ = rand.Read(body)
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Open(ctx, "file_1"); !errors.Is(err, domain.ErrFileNotFound) {
		t.Fatalf("readable before Commit: %v", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r, n, err := c.Open(ctx, "file_1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || n != int64(len(body)) || !bytes.Equal(got, body) {
		t.Fatalf("read back %d of %d bytes (length %d), equal %v: %v", len(got), len(body), n, bytes.Equal(got, body), err)
	}
	var stored struct {
		Filename string         `bson:"filename"`
		Metadata map[string]any `bson:"metadata"`
	}
	if err := db.Bucket(mongo.ContentsBucket).Database().Collection(mongo.ContentsBucket+".files").FindOne(ctx, bson.D{{Key: "_id", Value: "file_1"}}).Decode(&stored); err != nil {
		t.Fatal(err)
	}
	if stored.Filename != "x.pdf" || stored.Metadata["account"] != "acct_1" || stored.Metadata["livemode"] != true ||
		stored.Metadata["collection_case"] != "dc_1" || stored.Metadata["content_type"] != domain.TypePDF {
		t.Fatalf("stored beside the bytes: %+v", stored)
	}
	if err := c.Delete(ctx, "file_1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Open(ctx, "file_1"); !errors.Is(err, domain.ErrFileNotFound) {
		t.Fatalf("deleted content: %v", err)
	}
}
