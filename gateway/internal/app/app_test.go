package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/listing"
)

// memKeys is an in-memory domain.KeyRepository that counts lookups and can be made to block
// or fail.
type memKeys struct {
	mu      sync.Mutex
	byHash  map[domain.Hash]domain.Key
	touches []time.Time
	lookups atomic.Int64
	// gate, when set, is waited on by ByHash (after reading), to hold a lookup in flight.
	gate chan struct{}
	fail error
}

func newMemKeys() *memKeys { return &memKeys{byHash: map[domain.Hash]domain.Key{}} }

func (m *memKeys) Create(_ context.Context, k domain.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byHash[k.Hash()]; ok {
		return domain.ErrKeyExists
	}
	m.byHash[k.Hash()] = k
	return nil
}

func (m *memKeys) ByHash(_ context.Context, h domain.Hash) (domain.Key, error) {
	m.lookups.Add(1)
	m.mu.Lock()
	k, ok := m.byHash[h]
	fail, gate := m.fail, m.gate
	m.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if fail != nil {
		return domain.Key{}, fail
	}
	if !ok {
		return domain.Key{}, domain.KeyNotFound("")
	}
	return k, nil
}

func (m *memKeys) ByID(_ context.Context, id string) (domain.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.byHash {
		if k.ID() == id {
			return k, nil
		}
	}
	return domain.Key{}, domain.KeyNotFound(id)
}

func (m *memKeys) List(_ context.Context, account string, p listing.Params) ([]domain.Key, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []domain.Key
	for _, k := range m.byHash {
		if account == "" || k.Account() == account {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() > out[j].ID() })
	more := len(out) > p.Limit
	if more {
		out = out[:p.Limit]
	}
	return out, more, nil
}

func (m *memKeys) Revoke(_ context.Context, id string, at time.Time) (domain.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, k := range m.byHash {
		if k.ID() == id {
			if !k.Revoked() {
				k = rehydrate(k, func(s *domain.KeyState) { s.RevokedAt = at })
				m.byHash[h] = k
			}
			return k, nil
		}
	}
	return domain.Key{}, domain.KeyNotFound(id)
}

func (m *memKeys) Roll(_ context.Context, old, next domain.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.byHash[old.Hash()]
	if !ok {
		return domain.KeyNotFound(old.ID())
	}
	if cur.Revoked() || !cur.ExpiresAt().IsZero() {
		return domain.KeyNotRollable(old.ID())
	}
	if _, ok := m.byHash[next.Hash()]; ok {
		return domain.ErrKeyExists
	}
	m.byHash[old.Hash()] = rehydrate(cur, func(s *domain.KeyState) { s.ExpiresAt = old.ExpiresAt() })
	m.byHash[next.Hash()] = next
	return nil
}

func (m *memKeys) SetRateLimit(_ context.Context, id string, r *domain.RateLimit) (domain.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, k := range m.byHash {
		if k.ID() == id {
			k, err := k.WithRateLimit(r)
			if err != nil {
				return domain.Key{}, err
			}
			m.byHash[h] = k
			return k, nil
		}
	}
	return domain.Key{}, domain.KeyNotFound(id)
}

// rehydrate copies k with change applied to its stored form.
func rehydrate(k domain.Key, change func(*domain.KeyState)) domain.Key {
	s := domain.KeyState{ID: k.ID(), Account: k.Account(), Livemode: k.Livemode(), Type: k.Type(), Hash: k.Hash(),
		Created: k.Created(), LastUsed: k.LastUsed(), ExpiresAt: k.ExpiresAt(), RevokedAt: k.RevokedAt()}
	if r, ok := k.RateLimit(); ok {
		s.RateLimit = &r.PerSecond
	}
	s.Permissions = map[string]string{}
	for r, a := range k.Permissions().Map() {
		s.Permissions[string(r)] = a.String()
	}
	change(&s)
	return domain.RehydrateKey(s)
}

func (m *memKeys) TouchLastUsed(_ context.Context, _ string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touches = append(m.touches, at)
	return nil
}

func (m *memKeys) touchCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.touches)
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newService(t *testing.T, repo domain.KeyRepository, clk *clock, opt app.Options) *app.Service {
	t.Helper()
	opt.Now = clk.now
	return app.New(repo, slog.New(slog.NewTextHandler(io.Discard, nil)), opt)
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func mustCreate(t *testing.T, s *app.Service, account string, live bool) (domain.Key, string) {
	t.Helper()
	k, secret, err := s.CreateKey(context.Background(), app.CreateKey{Account: account, Livemode: live})
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return k, secret
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	repo := newMemKeys()
	s := newService(t, repo, newClock(), app.Options{})
	testKey, testSecret := mustCreate(t, s, "acct_a", false)
	liveKey, liveSecret := mustCreate(t, s, "acct_a", true)
	revokedKey, revokedSecret := mustCreate(t, s, "acct_b", false)
	if _, err := s.RevokeKey(ctx, revokedKey.ID()); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		secret string
		want   *domain.Key
	}{
		{"test key", testSecret, &testKey},
		{"live key", liveSecret, &liveKey},
		{"revoked", revokedSecret, nil},
		{"unknown", domain.NewSecret(domain.KeySecret, false), nil},
		{"malformed", "sk_test_nope", nil},
		{"empty", "", nil},
		{"test secret with live prefix", "sk_live_" + testSecret[len("sk_test_"):], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := s.Authenticate(ctx, tc.secret)
			if tc.want == nil {
				if !errors.Is(err, app.ErrUnauthenticated) {
					t.Fatalf("Authenticate = %v, want ErrUnauthenticated", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if k.ID() != tc.want.ID() || k.Livemode() != tc.want.Livemode() || k.Account() != tc.want.Account() {
				t.Fatalf("Authenticate = %s/%v, want %s/%v", k.ID(), k.Livemode(), tc.want.ID(), tc.want.Livemode())
			}
		})
	}
}

func TestAuthenticateStoreDown(t *testing.T) {
	repo := newMemKeys()
	s := newService(t, repo, newClock(), app.Options{})
	_, secret := mustCreate(t, s, "acct_a", false)
	repo.fail = errors.New("connection refused")
	_, err := s.Authenticate(context.Background(), secret)
	if err == nil || errors.Is(err, app.ErrUnauthenticated) {
		t.Fatalf("Authenticate with the store down = %v, want an error that is not ErrUnauthenticated", err)
	}
}

func TestCacheTTLAndRevocation(t *testing.T) {
	ctx := context.Background()
	repo := newMemKeys()
	clk := newClock()
	// Two replicas sharing one store.
	a := newService(t, repo, clk, app.Options{CacheTTL: 2 * time.Second})
	b := newService(t, repo, clk, app.Options{CacheTTL: 2 * time.Second})
	k, secret := mustCreate(t, a, "acct_a", false)
	unknown := domain.NewSecret(domain.KeySecret, false)

	for _, s := range []*app.Service{a, b} {
		for i := 0; i < 3; i++ {
			if _, err := s.Authenticate(ctx, secret); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Authenticate(ctx, unknown); !errors.Is(err, app.ErrUnauthenticated) {
				t.Fatal(err)
			}
		}
	}
	if n := repo.lookups.Load(); n != 4 {
		t.Fatalf("store lookups = %d, want 4 (one per replica per secret, found and not found both cached)", n)
	}

	if _, err := a.RevokeKey(ctx, k.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret); !errors.Is(err, app.ErrUnauthenticated) {
		t.Fatalf("replica that revoked: Authenticate = %v, want ErrUnauthenticated at once", err)
	}
	if _, err := b.Authenticate(ctx, secret); err != nil {
		t.Fatalf("other replica within the TTL: Authenticate = %v, want the cached key (documented bound)", err)
	}
	clk.advance(2 * time.Second)
	if _, err := b.Authenticate(ctx, secret); !errors.Is(err, app.ErrUnauthenticated) {
		t.Fatalf("other replica after the TTL: Authenticate = %v, want ErrUnauthenticated", err)
	}
}

func TestConcurrentMissesShareOneLookup(t *testing.T) {
	repo := newMemKeys()
	s := newService(t, repo, newClock(), app.Options{})
	_, secret := mustCreate(t, s, "acct_a", false)
	repo.gate = make(chan struct{})

	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Authenticate(context.Background(), secret)
			errs <- err
		}()
	}
	// Let the goroutines pile up on the one lookup in flight, then release it.
	deadline := time.Now().Add(5 * time.Second)
	for repo.lookups.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(repo.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := repo.lookups.Load(); got > 2 {
		t.Fatalf("store lookups = %d for %d concurrent misses, want them shared", got, n)
	}
}

// A lookup that read the key before it was revoked must not put it back in the cache after
// the revoke cleared it.
func TestRevokeDuringLookupIsNotUndone(t *testing.T) {
	ctx := context.Background()
	repo := newMemKeys()
	s := newService(t, repo, newClock(), app.Options{})
	k, secret := mustCreate(t, s, "acct_a", false)

	repo.gate = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := s.Authenticate(ctx, secret) // reads the active key, then waits on the gate
		done <- err
	}()
	for repo.lookups.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := s.RevokeKey(ctx, k.ID()); err != nil {
		t.Fatal(err)
	}
	close(repo.gate)
	if err := <-done; err != nil {
		t.Fatalf("the request that raced the revoke: %v (it read the key before the revoke, so it may pass)", err)
	}
	repo.gate = nil
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, app.ErrUnauthenticated) {
		t.Fatalf("after the revoke: Authenticate = %v, want ErrUnauthenticated (stale lookup was cached)", err)
	}
}

func TestCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	repo := newMemKeys()
	s := newService(t, repo, newClock(), app.Options{CacheSize: 4})
	_, secret := mustCreate(t, s, "acct_a", false)
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// A flood of unknown secrets only competes with other unknown secrets.
	for i := 0; i < 100; i++ {
		_, _ = s.Authenticate(ctx, domain.NewSecret(domain.KeySecret, false))
	}
	before := repo.lookups.Load()
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if repo.lookups.Load() != before {
		t.Fatal("a flood of unknown secrets evicted a valid key from the cache")
	}
}

func TestLastUsedIsWrittenAtMostOncePerInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	repo := newMemKeys()
	clk := newClock()
	s := newService(t, repo, clk, app.Options{LastUsedInterval: time.Minute})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	_, secret := mustCreate(t, s, "acct_a", false)

	for i := 0; i < 100; i++ {
		if _, err := s.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		clk.advance(100 * time.Millisecond) // ten seconds in all
	}
	waitFor(t, func() bool { return repo.touchCount() == 1 })
	clk.advance(time.Minute)
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return repo.touchCount() == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := repo.touchCount(); n != 2 {
		t.Fatalf("last_used writes = %d, want 2", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCreateKey(t *testing.T) {
	ctx := context.Background()
	repo := newMemKeys()
	s := newService(t, repo, newClock(), app.Options{})

	imported := domain.NewSecret(domain.KeySecret, false)
	// Trying the secret before it exists leaves a negative cache entry...
	if _, err := s.Authenticate(ctx, imported); !errors.Is(err, app.ErrUnauthenticated) {
		t.Fatal(err)
	}
	k, got, err := s.CreateKey(ctx, app.CreateKey{Account: "acct_dev", Secret: imported})
	if err != nil || got != imported {
		t.Fatalf("CreateKey(import) = %q, %v", got, err)
	}
	// ...which creating the key clears.
	if a, err := s.Authenticate(ctx, imported); err != nil || a.ID() != k.ID() {
		t.Fatalf("Authenticate(imported) = %v, %v", a.ID(), err)
	}
	if _, _, err := s.CreateKey(ctx, app.CreateKey{Account: "acct_dev", Secret: imported}); domainerr.KindOf(err) != domainerr.Conflict {
		t.Fatalf("importing the same secret twice = %v, want KindConflict", err)
	}
	for _, in := range []app.CreateKey{
		{Account: "acct_x", Livemode: true, Secret: imported},
		{Account: "acct_x", Secret: "sk_test_weak"},
		{Account: "bad"},
	} {
		if _, _, err := s.CreateKey(ctx, in); domainerr.KindOf(err) != domainerr.Invalid {
			t.Errorf("CreateKey(%+v) = %v, want KindInvalid", in, err)
		}
	}
}

func TestListKeysCursorMustExist(t *testing.T) {
	ctx := context.Background()
	repo := newMemKeys()
	s := newService(t, repo, newClock(), app.Options{})
	a, _ := mustCreate(t, s, "acct_a", false)
	mustCreate(t, s, "acct_b", false)

	for _, tc := range []struct {
		account string
		p       listing.Params
		param   string
	}{
		{"", listing.Params{Limit: 10, StartingAfter: "key_00000000000000000000000000"}, "starting_after"},
		{"acct_b", listing.Params{Limit: 10, EndingBefore: a.ID()}, "ending_before"},
	} {
		_, _, err := s.ListKeys(ctx, tc.account, tc.p)
		var de *domainerr.Error
		if !errors.As(err, &de) || de.Kind != domainerr.Invalid || de.Code != domainerr.CodeResourceMissing || de.Param != tc.param {
			t.Errorf("ListKeys(%q, %+v) = %v, want a 400 resource_missing on %s", tc.account, tc.p, err, tc.param)
		}
	}
	if _, _, err := s.ListKeys(ctx, "acct-bad", listing.Params{Limit: 10}); domainerr.KindOf(err) != domainerr.Invalid {
		t.Fatalf("ListKeys(bad account) = %v, want KindInvalid", err)
	}
	if _, _, err := s.ListKeys(ctx, "acct_a", listing.Params{Limit: 10, StartingAfter: a.ID()}); err != nil {
		t.Fatalf("ListKeys with the account's own cursor: %v", err)
	}
}

func TestRevokeUnknown(t *testing.T) {
	s := newService(t, newMemKeys(), newClock(), app.Options{})
	for _, id := range []string{"nope", "key_00000000000000000000000000"} {
		if _, err := s.RevokeKey(context.Background(), id); domainerr.KindOf(err) != domainerr.NotFound {
			t.Errorf("RevokeKey(%q) = %v, want KindNotFound", id, err)
		}
	}
}
