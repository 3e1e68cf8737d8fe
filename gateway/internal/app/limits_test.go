package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
)

// fakeLimiter counts calls per bucket and refuses past a fixed number, or fails.
type fakeLimiter struct {
	mu      sync.Mutex
	calls   map[string]int
	granted map[string]int
	rates   map[string]int
	allow   int // requests allowed per bucket
	fail    error
}

func newFakeLimiter(allow int) *fakeLimiter {
	return &fakeLimiter{calls: map[string]int{}, granted: map[string]int{}, rates: map[string]int{}, allow: allow}
}

func (f *fakeLimiter) Take(_ context.Context, bucket string, rate, burst int, _ time.Duration, n int) (app.RateDecision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return app.RateDecision{}, f.fail
	}
	f.calls[bucket]++
	f.rates[bucket] = rate
	used := f.taken(bucket)
	if used >= f.allow {
		return app.RateDecision{Limit: burst, RetryAfter: 3 * time.Second, ResetAfter: 4 * time.Second}, nil
	}
	g := min(n, f.allow-used)
	f.granted[bucket] += g
	return app.RateDecision{Granted: g, Limit: burst, Remaining: f.allow - used - g, ResetAfter: time.Second}, nil
}

func (f *fakeLimiter) taken(bucket string) int { return f.granted[bucket] }

// callsTo returns how many calls bucket got.
func (f *fakeLimiter) callsTo(bucket string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[bucket]
}

func TestRateLimitBuckets(t *testing.T) {
	ctx := context.Background()
	lim := newFakeLimiter(100)
	s := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim,
		Limits: app.Limits{LivePerSecond: 100, TestPerSecond: 25}})
	test, _ := mustCreate(t, s, "acct_a", false)
	test2, _ := mustCreate(t, s, "acct_a", false)
	live, _ := mustCreate(t, s, "acct_a", true)
	own, _, err := s.CreateKey(ctx, app.CreateKey{Account: "acct_a", RateLimit: &domain.RateLimit{PerSecond: 7}})
	if err != nil {
		t.Fatal(err)
	}
	unlimited, _, err := s.CreateKey(ctx, app.CreateKey{Account: "acct_a", RateLimit: &domain.RateLimit{PerSecond: 0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []domain.Key{test, test2, live, own, unlimited} {
		d, ok := s.RateLimit(ctx, k, domain.AccessRead)
		if k.ID() == unlimited.ID() {
			if ok {
				t.Fatalf("a key with rate_limit 0 was limited: %+v", d)
			}
			continue
		}
		if !ok || !d.Allowed {
			t.Fatalf("key %s: %+v %v", k.ID(), d, ok)
		}
	}
	want := map[string]int{"acct:acct_a:test": 25, "acct:acct_a:live": 100, "key:" + own.ID(): 7}
	for b, rate := range want {
		if lim.rates[b] != rate {
			t.Errorf("bucket %s rate = %d, want %d (buckets %v)", b, lim.rates[b], rate, lim.rates)
		}
	}
	s.WaitRefills()
	if lim.callsTo("acct:acct_a:test") != 2 || len(lim.calls) != 3 {
		t.Errorf("calls = %v; want two test keys of one account sharing its bucket", lim.calls)
	}

	off := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim, Limits: app.Limits{LivePerSecond: 100}})
	k, _ := mustCreate(t, off, "acct_b", false)
	if _, ok := off.RateLimit(ctx, k, domain.AccessRead); ok {
		t.Fatal("GATEWAY_RATE_LIMIT_TEST=0 still limits test mode")
	}
}

func TestRateLimitFailsOpen(t *testing.T) {
	lim := newFakeLimiter(1)
	lim.fail = errors.New("dial tcp: connection refused")
	s := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim,
		Limits: app.Limits{TestPerSecond: 1, AuthFailuresPerMinute: 1}})
	k, _ := mustCreate(t, s, "acct_a", false)
	for i := 0; i < 3; i++ {
		if _, ok := s.RateLimit(context.Background(), k, domain.AccessRead); ok {
			t.Fatal("a failing limiter limited a request; want fail open")
		}
		if _, blocked := s.AuthFailed(context.Background(), netip.MustParseAddr("192.0.2.1")); blocked {
			t.Fatal("a failing limiter blocked an address; want fail open")
		}
	}
}

func TestAuthFailuresBlockAnAddress(t *testing.T) {
	clk := newClock()
	lim := newFakeLimiter(3)
	s := newService(t, newMemKeys(), clk, app.Options{Limiter: lim, Limits: app.Limits{AuthFailuresPerMinute: 3}})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, blocked := s.AuthFailed(ctx, netip.MustParseAddr("192.0.2.1")); blocked {
			t.Fatalf("failure %d blocked the address, want 3 allowed", i+1)
		}
	}
	wait, blocked := s.AuthFailed(ctx, netip.MustParseAddr("192.0.2.1"))
	if !blocked || wait != 3*time.Second {
		t.Fatalf("4th failure: blocked %v for %s, want blocked for 3s", blocked, wait)
	}
	// Known as blocked without asking the limiter again.
	calls := lim.callsTo("authfail:192.0.2.1")
	if _, blocked := s.Blocked(netip.MustParseAddr("192.0.2.1")); !blocked {
		t.Fatal("Blocked = false right after the block")
	}
	if _, blocked := s.Blocked(netip.MustParseAddr("192.0.2.2")); blocked {
		t.Fatal("another address is blocked")
	}
	if lim.callsTo("authfail:192.0.2.1") != calls {
		t.Fatal("Blocked asked the limiter")
	}
	clk.advance(3 * time.Second)
	if _, blocked := s.Blocked(netip.MustParseAddr("192.0.2.1")); blocked {
		t.Fatal("still blocked after the retry time")
	}
}

func TestRateLimitLeases(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	lim := newFakeLimiter(1000)
	s := newService(t, newMemKeys(), clk, app.Options{Limiter: lim, Limits: app.Limits{TestPerSecond: 25, LivePerSecond: 5000}})
	test, _ := mustCreate(t, s, "acct_a", false)
	live, _ := mustCreate(t, s, "acct_a", true)
	// At 25/s a batch is one request: every request asks the limiter (the last one's batch
	// fetched ahead is one more call).
	for i := 0; i < 5; i++ {
		if _, ok := s.RateLimit(ctx, test, domain.AccessRead); !ok {
			t.Fatal("not limited")
		}
		s.WaitRefills()
	}
	if n := lim.callsTo("acct:acct_a:test"); n < 5 || n > 6 {
		t.Fatalf("limiter calls at 25/s = %d, want 5 (6 with the batch fetched ahead)", n)
	}
	// At 5,000/s a batch is 100: 250 requests within the lease window cost 3 calls, and one
	// more fetched ahead.
	for i := 0; i < 250; i++ {
		if d, ok := s.RateLimit(ctx, live, domain.AccessRead); !ok || !d.Allowed {
			t.Fatalf("request %d refused: %+v", i, d)
		}
	}
	s.WaitRefills()
	if n := lim.callsTo("acct:acct_a:live"); n < 3 || n > 4 {
		t.Fatalf("limiter calls at 5,000/s = %d, want 3 or 4 (batches of 100)", n)
	}
	// A lease not used up within its window is forfeited: the next request asks again.
	before := lim.callsTo("acct:acct_a:live")
	clk.advance(30 * time.Millisecond)
	s.RateLimit(ctx, live, domain.AccessRead)
	if n := lim.callsTo("acct:acct_a:live"); n != before+1 {
		t.Fatalf("limiter calls after the lease window = %d, want %d", n, before+1)
	}
}

func TestRateLimitRefusalIsRemembered(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	lim := newFakeLimiter(2)
	s := newService(t, newMemKeys(), clk, app.Options{Limiter: lim, Limits: app.Limits{TestPerSecond: 2}})
	k, _ := mustCreate(t, s, "acct_a", false)
	for i := 0; i < 2; i++ {
		if d, _ := s.RateLimit(ctx, k, domain.AccessRead); !d.Allowed {
			t.Fatalf("request %d refused", i+1)
		}
	}
	// The second took the bucket's last request: until the next one comes back (1/rate),
	// requests are refused without asking.
	s.WaitRefills()
	calls := lim.callsTo("acct:acct_a:test")
	d, ok := s.RateLimit(ctx, k, domain.AccessRead)
	if !ok || d.Allowed || d.RetryAfter != 500*time.Millisecond || d.Remaining != 0 || lim.callsTo("acct:acct_a:test") != calls {
		t.Fatalf("third request: %+v %v (%d calls, had %d), want refused for 0.5s without a call", d, ok, lim.callsTo("acct:acct_a:test"), calls)
	}
	clk.advance(time.Second)
	d, ok = s.RateLimit(ctx, k, domain.AccessRead)
	if !ok || d.Allowed || d.RetryAfter != 3*time.Second || d.Remaining != 0 {
		t.Fatalf("after a second: %+v %v, want the limiter's refusal for 3s", d, ok)
	}
	calls = lim.callsTo("acct:acct_a:test")
	clk.advance(time.Second)
	if d, _ := s.RateLimit(ctx, k, domain.AccessRead); d.Allowed || d.RetryAfter != 2*time.Second {
		t.Fatalf("during the refusal: %+v", d)
	}
	if lim.callsTo("acct:acct_a:test") != calls {
		t.Fatal("a remembered refusal asked the limiter again")
	}
}

// TestAdminAuthFailuresCountApart: the admin listener's wrong tokens have the same limit as bad
// API keys but buckets and blocks of their own.
func TestAdminAuthFailuresCountApart(t *testing.T) {
	clk := newClock()
	lim := newFakeLimiter(2)
	s := newService(t, newMemKeys(), clk, app.Options{Limiter: lim, Limits: app.Limits{AuthFailuresPerMinute: 2}})
	ctx := context.Background()
	admin := s.AdminAuth()
	for i := 0; i < 2; i++ {
		if _, blocked := admin.AuthFailed(ctx, netip.MustParseAddr("192.0.2.1")); blocked {
			t.Fatalf("admin failure %d blocked the address, want 2 allowed", i+1)
		}
	}
	if wait, blocked := admin.AuthFailed(ctx, netip.MustParseAddr("192.0.2.1")); !blocked || wait != 3*time.Second {
		t.Fatalf("3rd admin failure: blocked %v for %s, want blocked for 3s", blocked, wait)
	}
	if lim.rates["adminauthfail:192.0.2.1"] != 2 || lim.callsTo("authfail:192.0.2.1") != 0 {
		t.Fatalf("buckets %v rates %v: want the admin bucket at the configured limit, the public one untouched", lim.calls, lim.rates)
	}
	if _, blocked := admin.Blocked(netip.MustParseAddr("192.0.2.1")); !blocked {
		t.Fatal("admin Blocked = false right after the block")
	}
	if _, blocked := s.Blocked(netip.MustParseAddr("192.0.2.1")); blocked {
		t.Fatal("admin failures blocked the address on the public listener")
	}
	if _, blocked := s.AuthFailed(ctx, netip.MustParseAddr("192.0.2.1")); blocked {
		t.Fatal("the public listener's first failure was refused")
	}
	clk.advance(3 * time.Second)
	if _, blocked := admin.Blocked(netip.MustParseAddr("192.0.2.1")); blocked {
		t.Fatal("still blocked after the retry time")
	}

	off := newService(t, newMemKeys(), clk, app.Options{Limiter: lim, Limits: app.Limits{AuthFailuresPerMinute: 0}})
	for i := 0; i < 5; i++ {
		if _, blocked := off.AdminAuth().AuthFailed(ctx, netip.MustParseAddr("192.0.2.9")); blocked {
			t.Fatal("GATEWAY_AUTH_FAILURE_LIMIT=0 blocked an admin client")
		}
	}
}

// blockingLimiter grants every batch in full, except that the calls numbered in block wait
// until release is closed.
type blockingLimiter struct {
	mu      sync.Mutex
	calls   int
	block   map[int]bool
	release chan struct{}
}

func (b *blockingLimiter) Take(ctx context.Context, _ string, rate, burst int, _ time.Duration, n int) (app.RateDecision, error) {
	b.mu.Lock()
	b.calls++
	wait := b.block[b.calls]
	b.mu.Unlock()
	if wait {
		select {
		case <-b.release:
		case <-ctx.Done():
			return app.RateDecision{}, ctx.Err()
		}
	}
	return app.RateDecision{Granted: n, Limit: burst, Remaining: burst - n, ResetAfter: time.Second}, nil
}

// A busy bucket's next batch is fetched ahead, in the background: while that call hangs,
// requests are still served from the lease, none waits for it.
func TestRateLimitFetchesAhead(t *testing.T) {
	ctx := context.Background()
	lim := &blockingLimiter{block: map[int]bool{3: true}, release: make(chan struct{})}
	s := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim, Limits: app.Limits{TestPerSecond: 5000}})
	k, _ := mustCreate(t, s, "acct_a", false)
	done := make(chan int)
	go func() {
		// 100 from the first batch, 100 from the second (asked for when the first ran out
		// within its window: the bucket is busy), the third is asked for ahead, after 50.
		n := 0
		for ; n < 199; n++ {
			if d, ok := s.RateLimit(ctx, k, domain.AccessRead); !ok || !d.Allowed {
				break
			}
		}
		done <- n
	}()
	select {
	case n := <-done:
		if n != 199 {
			t.Fatalf("%d requests allowed, want 199", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request waited for the batch fetched ahead")
	}
	var calls int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		lim.mu.Lock()
		calls = lim.calls
		lim.mu.Unlock()
		if calls == 3 {
			break
		}
	}
	if calls != 3 {
		t.Fatalf("%d limiter calls, want 3 (the third one ahead of need)", calls)
	}
	close(lim.release)
	s.WaitRefills()
	// The batch fetched ahead is there: the next 100 requests cost no call.
	for i := 0; i < 100; i++ {
		if d, ok := s.RateLimit(ctx, k, domain.AccessRead); !ok || !d.Allowed {
			t.Fatalf("request %d refused: %+v", i, d)
		}
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.calls > 4 {
		t.Fatalf("%d limiter calls, want at most 4", lim.calls)
	}
}

// Requests that find the lease empty while a call is under way wait for that call and are
// served from what it brings back, instead of each making a call of its own in turn.
func TestRateLimitJoinsTheCallUnderWay(t *testing.T) {
	ctx := context.Background()
	lim := &blockingLimiter{block: map[int]bool{1: true}, release: make(chan struct{})}
	s := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim, Limits: app.Limits{TestPerSecond: 5000}})
	k, _ := mustCreate(t, s, "acct_a", false)
	var wg sync.WaitGroup
	var allowed sync.Map
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, ok := s.RateLimit(ctx, k, domain.AccessRead)
			allowed.Store(i, ok && d.Allowed)
		}()
	}
	time.Sleep(50 * time.Millisecond) // let them all find the call under way
	close(lim.release)
	wg.Wait()
	allowed.Range(func(k, v any) bool {
		if !v.(bool) {
			t.Errorf("request %v refused", k)
		}
		return true
	})
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.calls != 1 {
		t.Fatalf("%d limiter calls for 20 requests within one batch, want 1", lim.calls)
	}
}

// A request is refused only on Redis's word: one that waited through calls that left nothing
// for it (their batches forfeited before it ran again, here because every reading of the clock
// moves it past the lease window) makes a call of its own rather than answering 429.
func TestRateLimitWaitingIsNeverARefusal(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	lim := &blockingLimiter{block: map[int]bool{}, release: make(chan struct{})}
	s := app.New(newMemKeys(), slog.New(slog.NewTextHandler(io.Discard, nil)), app.Options{
		Limiter: lim, Limits: app.Limits{TestPerSecond: 5000},
		Now: func() time.Time { clk.advance(25 * time.Millisecond); return clk.now() },
	})
	k, _ := mustCreate(t, s, "acct_a", false)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if d, ok := s.RateLimit(ctx, k, domain.AccessRead); ok && !d.Allowed {
					t.Errorf("refused without Redis refusing: %+v", d)
					return
				}
			}
		}()
	}
	wg.Wait()
	s.WaitRefills()
}
