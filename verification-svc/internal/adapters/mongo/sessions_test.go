package mongo

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/verification-svc/internal/domain"
)

// These tests are about the adapter's mapping and queries on the real (embedded) store, or
// MONGODB_URI's server; versioned writes and the outbox are libs/docstore's, tested there.

func ptr[T any](v T) *T { return &v }

type fixture struct {
	t       *testing.T
	db      *docstore.DB
	repo    *Sessions
	queue   *outboxtest.Queue
	gen     *ids.Generator
	account string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	q := &outboxtest.Queue{}
	db := servicetest.Store(t)
	gen := ids.NewGenerator(nil)
	repo := NewSessions(db, outboxtest.NewRelay(q), emitter(gen))
	if err := repo.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: db, repo: repo, queue: q, gen: gen, account: gen.New(ids.Account)}
}

// emitter renders a session's events with a few of its fields (the port's rendering is the
// HTTP port's business), the report's event as the report's id.
func emitter(gen *ids.Generator) *events.Emitter[*domain.Session] {
	return &events.Emitter[*domain.Session]{IDs: gen, Now: time.Now,
		Object: func(s *domain.Session) any {
			var reasons []string
			if r := s.Report(); r != nil {
				for _, p := range r.Products {
					reasons = append(reasons, p.Reasons...)
				}
			}
			return map[string]any{"id": s.ID(), "status": s.Status(), "email": s.Applicant().Email,
				"metadata": s.Metadata(), "reasons": reasons}
		},
		Parts: map[string]func(*domain.Session, any) any{
			"verification_report.created": func(s *domain.Session, _ any) any {
				return map[string]string{"id": s.Report().ID, "verification_session": s.ID()}
			},
		},
	}
}

// create stores a new session of the fixture's account.
func (f *fixture) create(livemode bool, email string, created time.Time, ttl time.Duration) *domain.Session {
	f.t.Helper()
	id := f.gen.New(ids.VerificationSession)
	s, err := domain.New(domain.NewParams{
		ID: id, Account: f.account, Livemode: livemode, Created: created, TTL: ttl,
		ClientSecret: id + "_secret_x", WebhookSecret: "whsec_c2VjcmV0",
		Applicant: &domain.ApplicantParams{FirstName: ptr("Jane"), LastName: ptr("Doe"), Email: ptr(email),
			DateOfBirth: ptr("1990-01-01"), Phone: ptr("+4915112345678"),
			Address: &domain.AddressParams{Line1: ptr("1 Main St"), City: ptr("Berlin"), PostalCode: ptr("10115"), Country: ptr("DE")}},
		Products:   []string{"credit", "identity"},
		WebhookURL: ptr("https://hooks.example.com/x"),
		Metadata:   map[string]string{"a.b": "1", "$c": "2"},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.repo.Create(f.t.Context(), s); err != nil {
		f.t.Fatal(err)
	}
	return s
}

// move applies an advance through the repository.
func (f *fixture) move(s *domain.Session, to domain.Status, outcomes map[domain.Product]domain.ResultStatus) *domain.Session {
	f.t.Helper()
	out, err := f.repo.Update(f.t.Context(), s.ID(), s.Account(), s.Livemode(), func(s *domain.Session) error {
		return s.Apply(time.Now(), domain.Advance{To: to, Outcomes: outcomes})
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// Everything a session holds comes back as stored, through every stage (report, last_error,
// attempts, redaction).
func TestMappingRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.create(false, "Jane.Doe@Example.com", time.Now(), time.Hour)
	got, err := f.repo.Get(t.Context(), s.ID(), f.account, false)
	if err != nil {
		t.Fatal(err)
	}
	want := s.State()
	if g := got.State(); !equalState(g, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", g, want)
	}
	for _, to := range []domain.Status{domain.StatusPending, domain.StatusProcessing, domain.StatusCompleted} {
		s = f.move(s, to, map[domain.Product]domain.ResultStatus{domain.ProductCredit: domain.ResultFailed})
	}
	s2 := f.create(false, "x@example.com", time.Now(), time.Hour)
	s2 = f.move(s2, domain.StatusPending, nil)
	s2 = f.move(s2, domain.StatusExpired, nil)
	if _, err := f.repo.Update(t.Context(), s2.ID(), f.account, false, func(s *domain.Session) error {
		_, err := s.Redact(time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{s.ID(), s2.ID()} {
		stored, err := f.repo.Get(t.Context(), id, f.account, false)
		if err != nil {
			t.Fatal(err)
		}
		again := domain.Rehydrate(stored.State())
		if !equalState(again.State(), stored.State()) {
			t.Fatalf("mapping is not stable for %s", id)
		}
	}
	done, _ := f.repo.Get(t.Context(), s.ID(), f.account, false)
	if r := done.Report(); r == nil || len(r.Products) != 2 || r.Products[0].Status != domain.ResultFailed || len(r.Products[0].Reasons) != 1 {
		t.Fatalf("report %+v", r)
	}
	redacted, _ := f.repo.Get(t.Context(), s2.ID(), f.account, false)
	if redacted.Applicant().Email != domain.Redacted || redacted.RedactedAt().IsZero() || redacted.LastError() == nil ||
		len(redacted.Attempts()) != 1 || redacted.Attempts()[0].Outcome != domain.StatusExpired {
		t.Fatalf("redacted %+v", redacted.State())
	}
	// Every transition's event reached the outbox (and so the queue), once, routed to the
	// session's webhook_url; the report's object is the report.
	deadline := time.Now().Add(5 * time.Second)
	for len(f.queue.Events()) < 9 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	var types []string
	for _, e := range f.queue.Events() {
		types = append(types, e.Type)
		if d := e.Destination; d == nil || d.URL != "https://hooks.example.com/x" || d.Secret != "whsec_c2VjcmV0" {
			t.Errorf("%s: destination %+v", e.Type, d)
		}
		if e.Type == "verification_report.created" && !strings.Contains(string(e.Data.Object), `"verification_session":"`+s.ID()+`"`) {
			t.Errorf("report event object %s", e.Data.Object)
		}
	}
	slices.Sort(types)
	wantTypes := []string{"verification_report.created", "verification_session.completed", "verification_session.created",
		"verification_session.created", "verification_session.expired", "verification_session.pending", "verification_session.pending",
		"verification_session.processing", "verification_session.redacted"}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("events %v\nwant %v", types, wantTypes)
	}
}

func equalState(a, b domain.State) bool {
	return a.ID == b.ID && a.Status == b.Status && a.Applicant.Email == b.Applicant.Email &&
		a.Applicant.Address.Country == b.Applicant.Address.Country && slices.Equal(a.Products, b.Products) &&
		a.WebhookURL == b.WebhookURL && a.WebhookSecret == b.WebhookSecret && a.ClientSecret == b.ClientSecret &&
		len(a.Metadata) == len(b.Metadata) && a.Metadata["a.b"] == b.Metadata["a.b"] && a.Metadata["$c"] == b.Metadata["$c"] &&
		a.Created.Equal(b.Created) && a.ExpiresAt.Equal(b.ExpiresAt) && len(a.Attempts) == len(b.Attempts) &&
		(a.Report == nil) == (b.Report == nil) && a.RedactedAt.Equal(b.RedactedAt)
}

// Another account's or mode's session is not found, for reads and writes alike.
func TestOwnership(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.create(false, "a@example.com", time.Now(), time.Hour)
	for _, who := range []struct {
		account string
		live    bool
	}{{"acct_other", false}, {f.account, true}} {
		if _, err := f.repo.Get(t.Context(), s.ID(), who.account, who.live); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("Get as %v: %v", who, err)
		}
		_, err := f.repo.Update(t.Context(), s.ID(), who.account, who.live, func(*domain.Session) error {
			t.Error("fn called for another owner")
			return nil
		})
		if !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("Update as %v: %v", who, err)
		}
	}
	if _, err := f.repo.Get(t.Context(), f.gen.New(ids.VerificationSession), f.account, false); !errors.Is(err, domain.ErrSessionNotFound) {
		t.Errorf("Get of a missing id: %v", err)
	}
}

// A function that fails stores nothing, and its events are not published.
func TestUpdateStoresNothingWhenFnFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.create(false, "a@example.com", time.Now(), time.Hour)
	refused := errors.New("refused")
	_, err := f.repo.Update(t.Context(), s.ID(), f.account, false, func(s *domain.Session) error {
		if _, err := s.Cancel(time.Now(), domain.CancelOther); err != nil {
			return err
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("Update = %v; want fn's error", err)
	}
	got, _ := f.repo.Get(t.Context(), s.ID(), f.account, false)
	if got.Status() != domain.StatusCreated {
		t.Fatalf("a refused change was stored: %s", got.Status())
	}
	time.Sleep(50 * time.Millisecond)
	for _, e := range f.queue.Events() {
		if e.Type != "verification_session.created" {
			t.Fatalf("%s published for a change not stored", e.Type)
		}
	}
}

// The session as loaded renders an update's previous attributes: the mapping shares no memory
// with the document, so a change made in place (redaction overwrites the report's reasons,
// the applicant and the metadata) does not reach the "before", and previous_attributes are
// exactly the fields that changed, with their old values.
func TestPreviousAttributesOfAnUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.create(false, "a@example.com", time.Now(), time.Hour)
	for _, to := range []domain.Status{domain.StatusPending, domain.StatusProcessing, domain.StatusCompleted} {
		s = f.move(s, to, map[domain.Product]domain.ResultStatus{domain.ProductCredit: domain.ResultFailed})
	}
	before := s.Report().Products[0].Reasons
	if _, err := f.repo.Update(t.Context(), s.ID(), f.account, false, func(s *domain.Session) error {
		if _, err := s.Redact(time.Now()); err != nil {
			return err
		}
		s.RaiseUpdate("test.updated")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs := f.queue.Events()
		if i := slices.IndexFunc(evs, func(e events.Event) bool { return e.Type == "test.updated" }); i >= 0 {
			var prev map[string]any
			if err := json.Unmarshal(evs[i].Data.PreviousAttributes, &prev); err != nil {
				t.Fatalf("previous_attributes %s: %v", evs[i].Data.PreviousAttributes, err)
			}
			want := map[string]any{"email": "a@example.com", "metadata": map[string]any{"a.b": "1", "$c": "2"},
				"reasons": []any{before[0]}}
			if !reflect.DeepEqual(prev, want) {
				t.Fatalf("previous_attributes %v\nwant %v", prev, want)
			}
			if prev := evs[i-1]; prev.Type != "verification_session.redacted" || prev.Data.PreviousAttributes != nil {
				t.Fatalf("the event before: %s %s", prev.Type, prev.Data.PreviousAttributes)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no update event in %v", evs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestListFilters: newest first, scoped to account and mode, by status, by email (any case),
// by both, and pages both ways.
func TestListFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var all []*domain.Session // oldest first
	for i := range 7 {
		email := "a@example.com"
		if i%2 == 1 {
			email = "B@Example.com"
		}
		all = append(all, f.create(false, email, time.Now(), time.Hour))
	}
	f.create(true, "a@example.com", time.Now(), time.Hour) // the other mode
	all[1] = f.move(all[1], domain.StatusPending, nil)
	all[4] = f.move(all[4], domain.StatusPending, nil)
	all[5] = f.move(all[5], domain.StatusPending, nil)

	list := func(flt domain.Filter, p listing.Params) ([]string, bool) {
		t.Helper()
		if p.Limit == 0 {
			p.Limit = 10
		}
		got, more, err := f.repo.List(t.Context(), f.account, false, flt, p)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(got))
		for i, s := range got {
			out[i] = s.ID()
		}
		return out, more
	}
	ids := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, all[i].ID())
		}
		return out
	}
	for _, tt := range []struct {
		name string
		flt  domain.Filter
		want []string
	}{
		{"all", domain.Filter{}, ids(6, 5, 4, 3, 2, 1, 0)},
		{"status", domain.Filter{Status: domain.StatusPending}, ids(5, 4, 1)},
		{"email, other case", domain.Filter{ApplicantEmail: "b@EXAMPLE.com"}, ids(5, 3, 1)},
		{"both", domain.Filter{Status: domain.StatusPending, ApplicantEmail: "A@example.com"}, ids(4)},
		{"none match", domain.Filter{Status: domain.StatusCompleted}, nil},
	} {
		if got, more := list(tt.flt, listing.Params{}); !slices.Equal(got, tt.want) || more {
			t.Errorf("%s: %v (has_more %v); want %v", tt.name, got, more, tt.want)
		}
	}
	// Forward, then back from the second page.
	p1, more := list(domain.Filter{}, listing.Params{Limit: 3})
	if !slices.Equal(p1, ids(6, 5, 4)) || !more {
		t.Fatalf("page 1 %v %v", p1, more)
	}
	p2, more := list(domain.Filter{}, listing.Params{Limit: 3, StartingAfter: p1[2]})
	if !slices.Equal(p2, ids(3, 2, 1)) || !more {
		t.Fatalf("page 2 %v %v", p2, more)
	}
	p3, more := list(domain.Filter{}, listing.Params{Limit: 3, StartingAfter: p2[2]})
	if !slices.Equal(p3, ids(0)) || more {
		t.Fatalf("page 3 %v %v", p3, more)
	}
	back, more := list(domain.Filter{}, listing.Params{Limit: 3, EndingBefore: p3[0]})
	if !slices.Equal(back, ids(3, 2, 1)) || !more {
		t.Fatalf("back from page 3: %v %v", back, more)
	}
	back, more = list(domain.Filter{}, listing.Params{Limit: 3, EndingBefore: back[0]})
	if !slices.Equal(back, ids(6, 5, 4)) || more {
		t.Fatalf("back to page 1: %v %v", back, more)
	}
	back, more = list(domain.Filter{Status: domain.StatusPending}, listing.Params{Limit: 1, EndingBefore: all[1].ID()})
	if !slices.Equal(back, ids(4)) || !more {
		t.Fatalf("filtered page backwards: %v %v", back, more)
	}
}

// ExpiryDue finds created and pending sessions of every account whose expires_at has come,
// soonest first, and nothing else.
func TestExpiryDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := time.Now().Add(-time.Hour)
	soon := f.create(false, "a@example.com", base, 10*time.Minute)    // expired 50 min ago
	sooner := f.create(true, "a@example.com", base, 5*time.Minute)    // 55 min ago, live
	pending := f.create(false, "a@example.com", base, 20*time.Minute) // 40 min ago
	pending = f.move(pending, domain.StatusPending, nil)
	running := f.create(false, "a@example.com", base, 20*time.Minute) // processing: never expires
	running = f.move(running, domain.StatusPending, nil)
	f.move(running, domain.StatusProcessing, nil)
	f.create(false, "a@example.com", base, 2*time.Hour) // not yet
	got, err := f.repo.ExpiryDue(t.Context(), time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{sooner.ID(), soon.ID(), pending.ID()}; !slices.Equal(got, want) {
		t.Fatalf("ExpiryDue = %v; want %v", got, want)
	}
	if got, _ := f.repo.ExpiryDue(t.Context(), time.Now(), 2); len(got) != 2 {
		t.Fatalf("limit 2: %v", got)
	}
}

// TestIndexes: every query the adapter runs has an index that serves it exactly: the list with
// each filter (account, livemode, the filter's fields, _id) and the expiry sweep (status,
// expires_at). On a server that creates secondary indexes (MongoDB), they exist.
func TestIndexes(t *testing.T) {
	t.Parallel()
	keysOf := func(d any) []string {
		var out []string
		for _, e := range d.(bson.D) {
			out = append(out, e.Key)
		}
		return out
	}
	declared := map[string]bool{}
	for _, m := range SessionIndexes() {
		declared[strings.Join(keysOf(m.Keys), ",")] = true
	}
	for _, want := range []string{
		"account,livemode,_id",
		"account,livemode,status,_id",
		"account,livemode,applicant_email,_id",
		"account,livemode,status,applicant_email,_id",
		"status,expires_at",
	} {
		if !declared[want] {
			t.Errorf("no index on (%s); declared %v", want, declared)
		}
	}

	f := newFixture(t) // EnsureIndexes ran, and runs again without error
	if err := f.repo.EnsureIndexes(t.Context()); err != nil {
		t.Fatalf("EnsureIndexes again: %v", err)
	}
	if !f.db.MultiProcess() {
		t.Log("the embedded store gets unique indexes only (docs/architecture.md); the declarations are checked above")
		return
	}
	names := servicetest.IndexNames(t, f.db, Collection)
	for _, m := range SessionIndexes() {
		var o options.IndexOptions
		for _, set := range m.Options.List() {
			_ = set(&o)
		}
		if !slices.Contains(names, *o.Name) {
			t.Errorf("index %s not on the server: %v", *o.Name, names)
		}
	}
}
