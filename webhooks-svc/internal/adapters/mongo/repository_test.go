package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/domain"
)

// newRelay returns an outbox relay whose queue keeps what it is given: these tests are about
// the repository's queries and mapping (the outbox itself is libs/docstore's, tested there).
func newRelay() *outbox.Relay { return outboxtest.NewRelay(&outboxtest.Queue{}) }

// The contract every domain.Repository must keep, run against each adapter. There is one
// adapter today, the MongoDB one, run against the embedded store (or MONGODB_URI). Concurrent
// writers, retries and other processes are the store's (libs/docstore's contract suite).
func TestRepositoryContract(t *testing.T) {
	t.Parallel()
	db := servicetest.Store(t)
	if err := mongo.NewRepository(db, newRelay(), nil, 0).EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Each case works under its own account, so the cases share one store and run in
	// parallel without seeing each other's endpoints. The contract holds with the delivery
	// path's cache on as well as off.
	for _, ttl := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("cache=%s", ttl), func(t *testing.T) {
			t.Parallel()
			runContract(t, mongo.NewRepository(db, newRelay(), nil, ttl))
		})
	}
}

// fixture makes valid endpoints for one account.
type fixture struct {
	t       *testing.T
	repo    domain.Repository
	gen     *ids.Generator
	account string
}

func newFixture(t *testing.T, repo domain.Repository) *fixture {
	gen := ids.NewGenerator(nil)
	return &fixture{t: t, repo: repo, gen: gen, account: gen.New(ids.Account)}
}

func (f *fixture) endpoint(livemode bool, desc string) *domain.Endpoint {
	f.t.Helper()
	e, err := domain.New(domain.NewParams{
		ID:            f.gen.New(ids.WebhookEndpoint),
		Account:       f.account,
		Livemode:      livemode,
		Secret:        ids.StdSecret("whsec_", 32),
		Created:       time.Now(),
		URL:           "https://example.com/hooks",
		EnabledEvents: []string{"*"},
		Description:   &desc,
		Metadata:      map[string]string{"order": "1"},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *fixture) create(livemode bool, desc string) *domain.Endpoint {
	f.t.Helper()
	e := f.endpoint(livemode, desc)
	if _, err := f.repo.Create(f.t.Context(), e); err != nil {
		f.t.Fatal(err)
	}
	return e
}

// runContract runs the suite on repo.
func runContract(t *testing.T, repo domain.Repository) {
	t.Run("create then get returns the same endpoint", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		want := f.create(false, "first")
		got, err := repo.Get(t.Context(), want.ID(), f.account, false)
		if err != nil {
			t.Fatal(err)
		}
		if !equalState(got.State(), want.State()) {
			t.Fatalf("got %+v\nwant %+v", got.State(), want.State())
		}
	})

	t.Run("another account or mode does not see it", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		e := f.create(false, "mine")
		ctx := t.Context()
		for _, c := range []struct {
			account  string
			livemode bool
		}{{"acct_other", false}, {f.account, true}} {
			if _, err := repo.Get(ctx, e.ID(), c.account, c.livemode); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("Get as %s/%v: %v, want ErrNotFound", c.account, c.livemode, err)
			}
			_, err := repo.Update(ctx, e.ID(), c.account, c.livemode, func(e *domain.Endpoint) error { e.Disable(); return nil })
			if !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("Update as %s/%v: %v, want ErrNotFound", c.account, c.livemode, err)
			}
			if err := deleteEndpoint(repo, ctx, e.ID(), c.account, c.livemode); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("Delete as %s/%v: %v, want ErrNotFound", c.account, c.livemode, err)
			}
			page, _, err := repo.List(ctx, c.account, c.livemode, listing.Params{Limit: 100})
			if err != nil || len(page) != 0 {
				t.Errorf("List as %s/%v: %d endpoints, %v; want none", c.account, c.livemode, len(page), err)
			}
		}
		got, err := repo.Get(ctx, e.ID(), f.account, false)
		if err != nil || got.Status() != domain.StatusEnabled {
			t.Fatalf("owner's endpoint after foreign writes: %v, %v", got, err)
		}
	})

	t.Run("missing id", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		id := f.gen.New(ids.WebhookEndpoint)
		if _, err := repo.Get(t.Context(), id, f.account, false); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("Get: %v", err)
		}
		if err := deleteEndpoint(repo, t.Context(), id, f.account, false); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("Delete: %v", err)
		}
	})

	t.Run("update stores the change and returns it", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		e := f.create(false, "before")
		url := "https://example.org/new"
		got, err := repo.Update(t.Context(), e.ID(), f.account, false, func(e *domain.Endpoint) error {
			return e.Update(domain.Changes{URL: &url, Metadata: map[string]string{"order": "", "k": "v"}})
		})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := repo.Get(t.Context(), e.ID(), f.account, false)
		if err != nil {
			t.Fatal(err)
		}
		if !equalState(got.State(), stored.State()) || stored.URL() != url ||
			len(stored.Metadata()) != 1 || stored.Metadata()["k"] != "v" {
			t.Fatalf("returned %+v\nstored %+v", got.State(), stored.State())
		}
	})

	t.Run("any metadata key round-trips", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		e := f.create(false, "keys")
		md := map[string]string{"a.b": "1", "$set": "2", ".": "3", "with space": "4", "ünï": "5", "order": ""}
		if _, err := repo.Update(t.Context(), e.ID(), f.account, false, func(e *domain.Endpoint) error {
			return e.Update(domain.Changes{Metadata: md})
		}); err != nil {
			t.Fatal(err)
		}
		stored, err := repo.Get(t.Context(), e.ID(), f.account, false)
		if err != nil {
			t.Fatal(err)
		}
		delete(md, "order")
		if got := stored.Metadata(); fmt.Sprint(got) != fmt.Sprint(md) {
			t.Fatalf("metadata = %q, want %q", got, md)
		}
	})

	t.Run("update whose fn fails stores nothing", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		e := f.create(false, "keep")
		boom := errors.New("boom")
		_, err := repo.Update(t.Context(), e.ID(), f.account, false, func(e *domain.Endpoint) error {
			e.Disable()
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want fn's error", err)
		}
		stored, _ := repo.Get(t.Context(), e.ID(), f.account, false)
		if stored.Status() != domain.StatusEnabled {
			t.Fatal("a failed update changed the endpoint")
		}
	})

	t.Run("delete removes it", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		e := f.create(false, "gone")
		if err := deleteEndpoint(repo, t.Context(), e.ID(), f.account, false); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Get(t.Context(), e.ID(), f.account, false); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("Get after delete: %v", err)
		}
		if err := deleteEndpoint(repo, t.Context(), e.ID(), f.account, false); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})

	t.Run("pagination over 25 both ways", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, repo)
		var created []string
		for i := range 25 {
			created = append(created, f.create(false, fmt.Sprint(i)).ID())
			f.create(true, "other mode") // must never appear
		}
		newestFirst := slices.Clone(created)
		slices.Reverse(newestFirst)
		ctx := t.Context()
		list := func(p listing.Params) ([]string, bool) {
			t.Helper()
			p.Limit = 10
			page, more, err := repo.List(ctx, f.account, false, p)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]string, len(page))
			for i, e := range page {
				out[i] = e.ID()
			}
			return out, more
		}

		// Forwards: 10, 10, 5.
		var pages [][]string
		cursor := ""
		for i, wantMore := range []bool{true, true, false} {
			page, more := list(listing.Params{StartingAfter: cursor})
			if more != wantMore {
				t.Fatalf("forward page %d: has_more = %v, want %v", i+1, more, wantMore)
			}
			pages = append(pages, page)
			cursor = page[len(page)-1]
		}
		if got := slices.Concat(pages...); !slices.Equal(got, newestFirst) {
			t.Fatalf("forward pages = %v\nwant %v", got, newestFirst)
		}

		// Backwards from the last page: ending_before its first item gives the page before it,
		// and has_more says whether newer items remain.
		for i, wantMore := range []bool{true, false} {
			want := pages[1-i]
			page, more := list(listing.Params{EndingBefore: pages[2-i][0]})
			if !slices.Equal(page, want) || more != wantMore {
				t.Fatalf("backward step %d = %v (has_more %v), want %v (has_more %v)", i+1, page, more, want, wantMore)
			}
		}
	})
}

// deleteEndpoint deletes the endpoint the way the application does: an update that marks it
// deleted.
func deleteEndpoint(repo domain.Repository, ctx context.Context, id, account string, livemode bool) error {
	_, err := repo.Update(ctx, id, account, livemode, func(e *domain.Endpoint) error { e.Delete(); return nil })
	return err
}

func equalState(a, b domain.State) bool {
	return a.ID == b.ID && a.Account == b.Account && a.Livemode == b.Livemode && a.URL == b.URL &&
		slices.Equal(a.EnabledEvents, b.EnabledEvents) && a.Status == b.Status && a.Secret == b.Secret &&
		a.APIVersion == b.APIVersion && a.Description == b.Description &&
		fmt.Sprint(a.Metadata) == fmt.Sprint(b.Metadata) && a.Created.Equal(b.Created)
}
