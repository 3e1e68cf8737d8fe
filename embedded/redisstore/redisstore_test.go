package redisstore_test

import (
	"context"
	"errors"
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
					// The store's clock follows the wall clock in clockStep steps and can lag
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
