package redis_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"rentalplatform/embedded/testkit"
	redisadapter "rentalplatform/gateway/internal/adapters/redis"
	"rentalplatform/gateway/internal/domain"
)

// client connects to a Redis of the test's own (REDIS_URL's, else embedded).
func client(t *testing.T) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestIdempotencyStore(t *testing.T) {
	ctx := t.Context()
	rdb := client(t)
	s := redisadapter.NewIdempotency(rdb, time.Hour, nil)

	t.Run("lock, complete, replay", func(t *testing.T) {
		_, token, acquired, err := s.Begin(ctx, "acct_1:test:k1", "fp-1", time.Minute)
		if err != nil || !acquired || token == "" {
			t.Fatalf("first Begin = %q %v %v, want the lock", token, acquired, err)
		}
		rec, token2, acquired, err := s.Begin(ctx, "acct_1:test:k1", "fp-other", time.Minute)
		if err != nil || acquired || token2 != "" || rec.Done || rec.Fingerprint != "fp-1" {
			t.Fatalf("second Begin = %+v %v %v, want the first one's lock with its fingerprint", rec, acquired, err)
		}
		// Not the owner: Release leaves the lock alone.
		if err := s.Release(ctx, "acct_1:test:k1", "0123456789abcdef0123456789abcdef"); err != nil {
			t.Fatal(err)
		}
		if rec, _, acquired, _ := s.Begin(ctx, "acct_1:test:k1", "fp-1", time.Minute); acquired || rec.Fingerprint != "fp-1" {
			t.Fatal("a stranger's Release freed the lock")
		}
		body := []byte("{\"id\":\"we_1\",\n\"x\":\"\xff\x00binary\"}\n")
		want := domain.IdempotencyRecord{Fingerprint: "fp-1", Done: true, Response: domain.StoredResponse{
			Status: 201, Header: [][2]string{{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}},
			Body: body, RequestID: "req_1"}}
		if err := s.Complete(ctx, "acct_1:test:k1", token, want); err != nil {
			t.Fatal(err)
		}
		got, _, acquired, err := s.Begin(ctx, "acct_1:test:k1", "fp-1", time.Minute)
		if err != nil || acquired || !got.Done || got.Fingerprint != "fp-1" || got.Response.Status != 201 ||
			!bytes.Equal(got.Response.Body, body) || got.Response.RequestID != "req_1" || len(got.Response.Header) != 2 ||
			got.Response.Header[1] != [2]string{"Cache-Control", "no-store"} {
			t.Fatalf("replayed record = %+v (%v, %v), want %+v", got, acquired, err, want)
		}
		// The first record stored wins, even over a late request whose lock had expired.
		late := want
		late.Response.Body = []byte("late")
		if err := s.Complete(ctx, "acct_1:test:k1", "0123456789abcdef0123456789abcdef", late); err == nil {
			t.Fatal("Complete without the lock reported success")
		}
		if got, _, _, _ := s.Begin(ctx, "acct_1:test:k1", "fp-1", time.Minute); !bytes.Equal(got.Response.Body, body) {
			t.Fatalf("a late Complete replaced the record: %q", got.Response.Body)
		}
		// A finished record is not released by a stale owner.
		if err := s.Release(ctx, "acct_1:test:k1", token); err != nil {
			t.Fatal(err)
		}
		if got, _, _, _ := s.Begin(ctx, "acct_1:test:k1", "fp-1", time.Minute); !got.Done {
			t.Fatal("Release removed a finished record")
		}
	})

	t.Run("release frees the key", func(t *testing.T) {
		_, token, _, err := s.Begin(ctx, "acct_1:test:k2", "fp", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "acct_1:test:k2", token); err != nil {
			t.Fatal(err)
		}
		if _, _, acquired, err := s.Begin(ctx, "acct_1:test:k2", "fp", time.Minute); err != nil || !acquired {
			t.Fatalf("Begin after Release = %v %v, want the lock", acquired, err)
		}
	})

	t.Run("a crashed holder's lock expires", func(t *testing.T) {
		if _, _, acquired, err := s.Begin(ctx, "acct_1:test:k3", "fp", 300*time.Millisecond); err != nil || !acquired {
			t.Fatal(acquired, err)
		}
		if _, _, acquired, _ := s.Begin(ctx, "acct_1:test:k3", "fp", 300*time.Millisecond); acquired {
			t.Fatal("lock taken twice")
		}
		time.Sleep(400 * time.Millisecond)
		if _, _, acquired, err := s.Begin(ctx, "acct_1:test:k3", "fp", time.Minute); err != nil || !acquired {
			t.Fatalf("Begin after the lock TTL = %v %v, want the lock", acquired, err)
		}
	})

	t.Run("records expire after the TTL (within one slot more)", func(t *testing.T) {
		short := redisadapter.NewIdempotency(rdb, time.Second, nil) // slots of 1 s (the minimum)
		_, token, _, err := short.Begin(ctx, "acct_1:test:exp", "fp", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := short.Complete(ctx, "acct_1:test:exp", token, domain.IdempotencyRecord{Fingerprint: "fp", Done: true,
			Response: domain.StoredResponse{Status: 200}}); err != nil {
			t.Fatal(err)
		}
		if rec, _, acquired, err := short.Begin(ctx, "acct_1:test:exp", "fp", time.Minute); err != nil || acquired || !rec.Done {
			t.Fatalf("right after: %+v %v %v", rec, acquired, err)
		}
		time.Sleep(3100 * time.Millisecond)
		if _, _, acquired, err := short.Begin(ctx, "acct_1:test:exp", "fp", time.Minute); err != nil || !acquired {
			t.Fatalf("after TTL + slot: acquired %v %v, want the record gone", acquired, err)
		}
		// However many records, the keys are a lock per running request plus a hash per slot.
		n, err := rdb.DBSize(ctx).Result()
		if err != nil || n > 20 {
			t.Fatalf("%d keys in Redis, %v", n, err)
		}
	})

	t.Run("one of many concurrent callers gets the lock", func(t *testing.T) {
		var won atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, acquired, err := s.Begin(ctx, "acct_1:test:race", "fp", time.Minute)
				if err != nil {
					t.Error(err)
				}
				if acquired {
					won.Add(1)
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d callers got the lock, want 1", won.Load())
		}
	})
}

func TestLimiter(t *testing.T) {
	ctx := t.Context()
	l := redisadapter.NewLimiter(client(t))
	for i := 5; i > 2; i-- {
		d, err := l.Take(ctx, "acct:acct_1:test", 5, 5, time.Second, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Granted != 1 || d.Limit != 5 || d.Remaining != i-1 || d.ResetAfter <= 0 || d.ResetAfter > time.Second {
			t.Fatalf("request %d: %+v", 6-i, d)
		}
	}
	// A batch gets what is left, not more.
	if d, err := l.Take(ctx, "acct:acct_1:test", 5, 5, time.Second, 10); err != nil || d.Granted != 2 || d.Remaining != 0 {
		t.Fatalf("batch of 10 with 2 left: %+v %v", d, err)
	}
	d, err := l.Take(ctx, "acct:acct_1:test", 5, 5, time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Granted != 0 || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond+50*time.Millisecond {
		t.Fatalf("over the burst: %+v, want refused with a retry within one emission interval (200ms)", d)
	}
	// Another bucket is independent.
	if d, err := l.Take(ctx, "acct:acct_1:live", 5, 5, time.Second, 1); err != nil || d.Granted != 1 {
		t.Fatalf("other bucket: %+v %v", d, err)
	}
	time.Sleep(d.RetryAfter + 20*time.Millisecond)
	if d, err := l.Take(ctx, "acct:acct_1:test", 5, 5, time.Second, 1); err != nil || d.Granted != 1 {
		t.Fatalf("after RetryAfter: %+v %v, want allowed", d, err)
	}
}

func TestRedisDown(t *testing.T) {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	if _, err := redisadapter.NewLimiter(rdb).Take(t.Context(), "x", 1, 1, time.Second, 1); err == nil {
		t.Fatal("Allow without Redis succeeded")
	}
	if _, _, _, err := redisadapter.NewIdempotency(rdb, time.Hour, nil).Begin(t.Context(), "x", "fp", time.Second); err == nil {
		t.Fatal("Begin without Redis succeeded")
	}
}
