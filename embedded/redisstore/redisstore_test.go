package redisstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"rentalplatform/embedded/redisstore"
)

func start(t *testing.T) *redisstore.Store {
	t.Helper()
	s, err := redisstore.Start(redisstore.Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func client(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("parse %q: %v", url, err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestTTLExpiresInRealTime checks that each way of setting a TTL makes the key
// vanish in wall-clock time, within 100 ms of its deadline, without anyone
// calling FastForward.
func TestTTLExpiresInRealTime(t *testing.T) {
	t.Parallel()
	s := start(t)
	rdb := client(t, s.URL())

	cases := map[string]func(ctx context.Context, key string) error{
		"SET PX": func(ctx context.Context, key string) error {
			return rdb.Set(ctx, key, "v", 200*time.Millisecond).Err()
		},
		"SET EX": func(ctx context.Context, key string) error {
			return rdb.Do(ctx, "SET", key, "v", "EX", 1).Err()
		},
		"EXPIRE": func(ctx context.Context, key string) error {
			if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
				return err
			}
			return rdb.Expire(ctx, key, time.Second).Err()
		},
		"PEXPIRE": func(ctx context.Context, key string) error {
			if err := rdb.HSet(ctx, key, "f", "v").Err(); err != nil {
				return err
			}
			return rdb.PExpire(ctx, key, 200*time.Millisecond).Err()
		},
	}
	ttls := map[string]time.Duration{"SET PX": 200 * time.Millisecond, "SET EX": time.Second, "EXPIRE": time.Second, "PEXPIRE": 200 * time.Millisecond}

	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			key := "k:" + name
			ttl := ttls[name]

			begin := time.Now()
			if err := set(ctx, key); err != nil {
				t.Fatalf("set: %v", err)
			}
			if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Fatalf("right after set: exists=%d err=%v", n, err)
			}

			// Poll until the key is gone; it must not outlive its deadline
			// by more than 100 ms (plus set-up time, measured from before SET).
			for {
				n, err := rdb.Exists(ctx, key).Result()
				if err != nil {
					t.Fatalf("exists: %v", err)
				}
				elapsed := time.Since(begin)
				if n == 0 {
					// The store's clock follows the wall clock in steps (minClockStep while it holds few keys) and can lag
					// further while its goroutine waits for a CPU, so a key may go that much
					// early; 50 ms covers a loaded CI machine and still catches a TTL misread.
					if elapsed < ttl-50*time.Millisecond {
						t.Fatalf("gone after %v, before its TTL %v", elapsed, ttl)
					}
					break
				}
				if elapsed > ttl+100*time.Millisecond {
					t.Fatalf("still there after %v (TTL %v)", elapsed, ttl)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestPX200GoneAfter500ms is the plain form of the contract: a key set with
// PX 200 is gone half a second later, with nothing accessing it meanwhile.
func TestPX200GoneAfter500ms(t *testing.T) {
	t.Parallel()
	s := start(t)
	rdb := client(t, s.URL())
	ctx := t.Context()

	if err := rdb.Do(ctx, "SET", "short", "v", "PX", 200).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	if err := rdb.Set(ctx, "forever", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	time.Sleep(500 * time.Millisecond)

	if _, err := rdb.Get(ctx, "short").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET short after 500ms: err=%v, want redis.Nil", err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 1 {
		t.Fatalf("DBSIZE: %d, %v; want 1 (only the key without TTL)", n, err)
	}
}

// TestAsynqRoundTrip enqueues one task and processes it with an asynq server,
// which exercises asynq's Lua scripts against miniredis.
func TestAsynqRoundTrip(t *testing.T) {
	t.Parallel()
	s := start(t)
	redisOpt, err := asynq.ParseRedisURI(s.URL())
	if err != nil {
		t.Fatalf("parse URL: %v", err)
	}

	c := asynq.NewClient(redisOpt)
	defer func() { _ = c.Close() }()
	info, err := c.Enqueue(asynq.NewTask("greet", []byte("hello")), asynq.MaxRetry(0))
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}

	got := make(chan string, 1)
	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:       1,
		TaskCheckInterval: 50 * time.Millisecond,
		ShutdownTimeout:   time.Second,
		LogLevel:          asynq.ErrorLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("greet", func(_ context.Context, task *asynq.Task) error {
		got <- string(task.Payload())
		return nil
	})
	if err := srv.Start(mux); err != nil {
		t.Fatalf("start server: %v", err)
	}
	defer srv.Shutdown()

	select {
	case p := <-got:
		if p != "hello" {
			t.Fatalf("payload %q, want hello", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("task not processed within 10s")
	}

	// The task must also be recorded as done (not retried or archived).
	insp := asynq.NewInspector(redisOpt)
	defer func() { _ = insp.Close() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q, err := insp.GetQueueInfo(info.Queue)
		if err != nil {
			t.Fatalf("queue info: %v", err)
		}
		if q.Active == 0 && q.Pending == 0 && q.Processed == 1 && q.Failed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue state: %+v", q)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// What Save writes, Restore brings back into a new store with the TTL that was left: the
// round trip `make run` makes across a clean stop and start.
func TestSaveAndRestore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "redis.json")

	first := start(t)
	rdb := client(t, first.URL())
	if err := rdb.HSet(ctx, "keep:hash", "f1", "v1", "f2", "\xff\x00").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Expire(ctx, "keep:hash", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPush(ctx, "keep:list", "a", "b", "c").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "other:key", "not kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := first.Save(path, "keep:"); err != nil || n != 2 {
		t.Fatalf("Save = %d, %v; want 2 keys", n, err)
	}
	// Saved again over the first file (as every stop does): replaced whole, nothing left beside it.
	if n, err := first.Save(path, "keep:"); err != nil || n != 2 {
		t.Fatalf("second Save = %d, %v", n, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the data folder holds %d files, want the snapshot alone", len(entries))
	}
	// The records hold API responses (webhook secrets among them): the file is the user's only.
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("snapshot mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	second := start(t)
	if n, err := second.Restore(path); err != nil || n != 2 {
		t.Fatalf("Restore = %d, %v; want 2 keys", n, err)
	}
	rdb2 := client(t, second.URL())
	if got := rdb2.HGetAll(ctx, "keep:hash").Val(); got["f1"] != "v1" || got["f2"] != "\xff\x00" {
		t.Errorf("restored hash = %q", got)
	}
	if ttl := rdb2.TTL(ctx, "keep:hash").Val(); ttl <= 50*time.Minute || ttl > time.Hour {
		t.Errorf("restored TTL = %v, want what was left of an hour", ttl)
	}
	if got := rdb2.LRange(ctx, "keep:list", 0, -1).Val(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("restored list = %q", got)
	}
	if rdb2.Exists(ctx, "other:key").Val() != 0 {
		t.Error("a key outside the prefixes was kept")
	}

	// A first start has no snapshot; a damaged one is an error, not an empty store.
	if n, err := start(t).Restore(filepath.Join(t.TempDir(), "none.json")); n != 0 || err != nil {
		t.Errorf("Restore of a missing file = %d, %v; want 0, nil", n, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := start(t).Restore(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Restore of a damaged file = %v, want an error naming it", err)
	}
}
