package app_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
)

// memIdempotency is an in-memory app.IdempotencyStore without expiry.
type memIdempotency struct {
	mu     sync.Mutex
	recs   map[string]domain.IdempotencyRecord
	owners map[string]string
	n      int
	fail   error
}

func newMemIdempotency() *memIdempotency {
	return &memIdempotency{recs: map[string]domain.IdempotencyRecord{}, owners: map[string]string{}}
}

func (m *memIdempotency) Begin(_ context.Context, id, fp string, _ time.Duration) (domain.IdempotencyRecord, string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return domain.IdempotencyRecord{}, "", false, m.fail
	}
	if r, ok := m.recs[id]; ok {
		return r, "", false, nil
	}
	m.n++
	tok := "tok" + strconv.Itoa(m.n)
	m.recs[id] = domain.IdempotencyRecord{Fingerprint: fp}
	m.owners[id] = tok
	return domain.IdempotencyRecord{}, tok, true, nil
}

func (m *memIdempotency) Complete(_ context.Context, id, token string, rec domain.IdempotencyRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owners[id] != token {
		return errors.New("lock lost")
	}
	delete(m.owners, id)
	m.recs[id] = rec
	return nil
}

func (m *memIdempotency) Release(_ context.Context, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owners[id] == token {
		delete(m.owners, id)
		delete(m.recs, id)
	}
	return nil
}

func TestIdempotentRequests(t *testing.T) {
	ctx := context.Background()
	store := newMemIdempotency()
	s := newService(t, newMemKeys(), newClock(), app.Options{Idempotency: store})
	sc := app.IdempotencyScope{Account: "acct_a", Key: "k1"}
	resp := domain.StoredResponse{Status: 200, Body: []byte(`{"id":"we_1"}`), RequestID: "req_1"}

	c, rec, err := s.BeginIdempotent(ctx, sc, "fp1")
	if err != nil || rec != nil || !c.Held() {
		t.Fatalf("first = %+v %v %v, want a claim", c, rec, err)
	}
	if _, _, err := s.BeginIdempotent(ctx, sc, "fp1"); !errors.Is(err, domain.ErrIdempotencyKeyInUse) {
		t.Fatalf("same key while running = %v, want in use", err)
	}
	if _, _, err := s.BeginIdempotent(ctx, sc, "fp2"); !errors.Is(err, domain.ErrIdempotencyKeyReused) {
		t.Fatalf("other request while running = %v, want reused", err)
	}
	s.CompleteIdempotent(ctx, c, "fp1", resp)
	_, rec, err = s.BeginIdempotent(ctx, sc, "fp1")
	if err != nil || rec == nil || string(rec.Response.Body) != `{"id":"we_1"}` {
		t.Fatalf("replay = %+v %v", rec, err)
	}
	if _, _, err := s.BeginIdempotent(ctx, sc, "fp2"); !errors.Is(err, domain.ErrIdempotencyKeyReused) {
		t.Fatalf("other request after = %v, want reused", err)
	}
	// Upload: no fingerprint yet; the finished record comes back for the caller to compare.
	if _, rec, err := s.BeginIdempotent(ctx, sc, ""); err != nil || rec == nil {
		t.Fatalf("upload replay = %+v %v", rec, err)
	}

	t.Run("scope is account, mode and key", func(t *testing.T) {
		for _, other := range []app.IdempotencyScope{
			{Account: "acct_b", Key: "k1"},
			{Account: "acct_a", Livemode: true, Key: "k1"},
			{Account: "acct_a", Key: "k2"},
		} {
			c, rec, err := s.BeginIdempotent(ctx, other, "fp2")
			if err != nil || rec != nil || !c.Held() {
				t.Fatalf("%+v: %v %v, want a fresh claim", other, rec, err)
			}
			s.ReleaseIdempotent(ctx, c)
		}
	})

	t.Run("answers that are not kept release the key", func(t *testing.T) {
		for _, status := range []int{409, 429, 503} {
			sc := app.IdempotencyScope{Account: "acct_a", Key: "nk" + strconv.Itoa(status)}
			c, _, _ := s.BeginIdempotent(ctx, sc, "fp")
			s.CompleteIdempotent(ctx, c, "fp", domain.StoredResponse{Status: status})
			if c2, rec, err := s.BeginIdempotent(ctx, sc, "fp"); err != nil || rec != nil || !c2.Held() {
				t.Fatalf("after a %d: %v %v, want the key free", status, rec, err)
			}
		}
	})

	t.Run("store down is ErrIdempotencyUnavailable", func(t *testing.T) {
		store.fail = errors.New("connection refused")
		defer func() { store.fail = nil }()
		if _, _, err := s.BeginIdempotent(ctx, app.IdempotencyScope{Account: "acct_a", Key: "x"}, "fp"); !errors.Is(err, app.ErrIdempotencyUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRollKeyAndRestrictedKeys(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := newService(t, newMemKeys(), clk, app.Options{})
	perms, err := domain.ParsePermissions(map[string]string{"events": "read"})
	if err != nil {
		t.Fatal(err)
	}
	old, oldSecret, err := s.CreateKey(ctx, app.CreateKey{Account: "acct_a", Permissions: &perms})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, oldSecret); err != nil || oldSecret[:8] != "rk_test_" {
		t.Fatalf("restricted key %q: %v", oldSecret, err)
	}
	next, nextSecret, err := s.RollKey(ctx, old.ID(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if next.ID() == old.ID() || next.Type() != domain.KeyRestricted || nextSecret[:8] != "rk_test_" {
		t.Fatalf("successor = %+v %q", next, nextSecret)
	}
	clk.advance(59 * time.Minute)
	for _, sec := range []string{oldSecret, nextSecret} {
		if _, err := s.Authenticate(ctx, sec); err != nil {
			t.Fatalf("within the overlap: %v", err)
		}
	}
	clk.advance(time.Minute)
	if _, err := s.Authenticate(ctx, oldSecret); !errors.Is(err, app.ErrUnauthenticated) {
		t.Fatalf("old key after expires_in: %v, want ErrUnauthenticated (even from the cache)", err)
	}
	if _, err := s.Authenticate(ctx, nextSecret); err != nil {
		t.Fatalf("successor: %v", err)
	}
	if _, _, err := s.RollKey(ctx, old.ID(), 0); domainerr.CodeOf(err) != domainerr.CodeInvalidState {
		t.Fatalf("rolling the rolled key: %v, want KindInvalidState", err)
	}
	// expires_in 0 stops the old key at once on this replica.
	_, third, err := s.RollKey(ctx, next.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, nextSecret); !errors.Is(err, app.ErrUnauthenticated) {
		t.Fatalf("rolled with expires_in 0: %v, want ErrUnauthenticated at once", err)
	}
	if _, err := s.Authenticate(ctx, third); err != nil {
		t.Fatal(err)
	}

	// A rate-limit change is seen at once by this replica's cache.
	upd, err := s.SetRateLimit(ctx, next.ID(), &domain.RateLimit{PerSecond: 3})
	if rl, ok := upd.RateLimit(); err != nil || !ok || rl.PerSecond != 3 {
		t.Fatalf("SetRateLimit = %+v %v", upd, err)
	}
	if _, err := s.SetRateLimit(ctx, next.ID(), &domain.RateLimit{PerSecond: -1}); domainerr.KindOf(err) != domainerr.Invalid {
		t.Fatalf("negative limit: %v", err)
	}
	if _, err := s.GetKey(ctx, "key_nope"); domainerr.KindOf(err) != domainerr.NotFound {
		t.Fatalf("GetKey(bad id): %v", err)
	}
}
