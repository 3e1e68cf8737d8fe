package testkit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"rentalplatform/embedded/redisstore"
)

// A shared Redis (REDIS_URL) is split between concurrent tests, possibly of
// several test binaries, by its logical databases: DB 0 holds one lock key
// per database 1..15, and a test owns the database whose lock it holds.
const (
	firstTestDB = 1
	lastTestDB  = 15
	lockPrefix  = "testkit:lock:"

	// lockTTL frees the database of a test binary that died without cleanup.
	lockTTL = 10 * time.Minute
	// lockRefresh keeps the lock of a long test alive well before it lapses.
	lockRefresh = lockTTL / 4
	// claimTimeout is how long a test waits for a free database.
	claimTimeout = 2 * time.Minute
	// claimRetry is the base pause between rounds when every database is taken.
	claimRetry = 100 * time.Millisecond
)

// Lua scripts so that only the holder (same token) extends or deletes a lock:
// a plain PEXPIRE/DEL could act on a lock that lapsed and another test took.
const (
	refreshScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`
	releaseScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
)

// Redis returns the URL of an empty Redis database that belongs to this test.
//
// If REDIS_URL is set, the test gets an exclusive logical database (1..15) on
// that server, claimed with a lock key in DB 0 and flushed before and after
// use; if all are taken it waits up to 2 minutes for one. Otherwise an
// in-process miniredis with real-time TTLs is started and closed in
// t.Cleanup.
func Redis(t testing.TB) string {
	t.Helper()
	if base := os.Getenv("REDIS_URL"); base != "" {
		return claimRedisDB(t, base)
	}
	s, err := redisstore.Start(redisstore.Options{})
	if err != nil {
		t.Fatalf("testkit: start embedded Redis: %v", err)
	}
	t.Cleanup(s.Close)
	return s.URL()
}

// claimRedisDB locks a free database on the server at base, flushes it, keeps
// the lock alive until t.Cleanup, and then flushes and releases it.
func claimRedisDB(t testing.TB, base string) string {
	t.Helper()
	lockClient := newRedisClient(t, base, 0)
	token := randomHex(16)

	ctx, cancel := context.WithTimeout(t.Context(), claimTimeout)
	db, err := claimDB(ctx, lockClient, token)
	cancel()
	if err != nil {
		_ = lockClient.Close()
		t.Fatalf("testkit: claim a Redis database on REDIS_URL: %v", err)
	}
	lockKey := lockPrefix + strconv.Itoa(db)
	dataClient := newRedisClient(t, base, db)

	// Registered before anything can fail below, so the lock is always
	// released; it runs after the refresher has stopped (Cleanup is LIFO).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := dataClient.FlushDB(ctx).Err(); err != nil {
			t.Errorf("testkit: flush Redis DB %d: %v", db, err)
		}
		if err := lockClient.Eval(ctx, releaseScript, []string{lockKey}, token).Err(); err != nil {
			t.Errorf("testkit: release %s: %v", lockKey, err)
		}
		_ = dataClient.Close()
		_ = lockClient.Close()
	})

	if err := dataClient.FlushDB(t.Context()).Err(); err != nil {
		t.Fatalf("testkit: flush Redis DB %d: %v", db, err)
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		keepLock(t, lockClient, lockKey, token, stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})

	u, err := urlWithDB(base, db)
	if err != nil {
		t.Fatalf("testkit: REDIS_URL: %v", err)
	}
	return u
}

// claimDB tries each test database once per round, starting at a random one
// so concurrent callers rarely race for the same key, until one SET NX wins.
func claimDB(ctx context.Context, c *redis.Client, token string) (int, error) {
	const n = lastTestDB - firstTestDB + 1
	for {
		offset := rand.IntN(n)
		for i := range n {
			db := firstTestDB + (offset+i)%n
			ok, err := c.SetNX(ctx, lockPrefix+strconv.Itoa(db), token, lockTTL).Result()
			if err != nil {
				return 0, fmt.Errorf("lock DB %d: %w", db, err)
			}
			if ok {
				return db, nil
			}
		}
		// Jitter spreads out waiters so they do not retry in lockstep.
		pause := claimRetry + rand.N(claimRetry)
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("all Redis test databases %d..%d stayed locked: %w", firstTestDB, lastTestDB, context.Cause(ctx))
		case <-time.After(pause):
		}
	}
}

// keepLock extends the lock every lockRefresh until stop is closed. Losing
// the lock means another test may now share the database, so it fails the
// test rather than let it pass on polluted data.
func keepLock(t testing.TB, c *redis.Client, key, token string, stop <-chan struct{}) {
	ticker := time.NewTicker(lockRefresh)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		n, err := c.Eval(ctx, refreshScript, []string{key}, token, lockTTL.Milliseconds()).Int()
		cancel()
		switch {
		case err != nil:
			// Transient: the next tick retries, well before the lock lapses.
			t.Logf("testkit: refresh %s: %v", key, err)
		case n != 1:
			t.Errorf("testkit: lost %s: another test may be using the same Redis database", key)
			return
		}
	}
}

// newRedisClient connects to the server at base, on logical database db.
func newRedisClient(t testing.TB, base string, db int) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(base)
	if err != nil {
		t.Fatalf("testkit: parse REDIS_URL: %v", err)
	}
	opts.DB = db
	return redis.NewClient(opts)
}

// urlWithDB rewrites base to select database db, keeping scheme, credentials
// and other parameters. redis:// and rediss:// carry the database in the
// path; unix:// URLs carry it in the "db" parameter (which go-redis also
// honours for the others, so a stale one is removed).
func urlWithDB(base string, db int) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", base, err)
	}
	q := u.Query()
	if u.Scheme == "unix" {
		q.Set("db", strconv.Itoa(db))
	} else {
		u.Path = "/" + strconv.Itoa(db)
		u.RawPath = ""
		q.Del("db")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}
