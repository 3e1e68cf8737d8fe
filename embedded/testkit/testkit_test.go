package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/embedded/mongostore"
	"rentalplatform/embedded/redisstore"
	"rentalplatform/embedded/testkit"
)

func TestMongoParallel(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		names []string
	)
	t.Run("group", func(t *testing.T) {
		for i := range 3 {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				db := testkit.MongoDatabase(t)
				mu.Lock()
				names = append(names, db.Name())
				mu.Unlock()

				coll := db.Collection("things")
				if _, err := coll.InsertOne(t.Context(), bson.D{{Key: "_id", Value: "x"}, {Key: "i", Value: i}}); err != nil {
					t.Fatalf("insert: %v", err)
				}
				var got struct{ I int }
				if err := coll.FindOne(t.Context(), bson.D{{Key: "_id", Value: "x"}}).Decode(&got); err != nil || got.I != i {
					t.Fatalf("find: %+v, %v", got, err)
				}
			})
		}
	})
	slices.Sort(names)
	if len(slices.Compact(names)) != 3 {
		t.Fatalf("database names not unique: %v", names)
	}
	for _, n := range names {
		if len(n) != len("t_")+16 || !strings.HasPrefix(n, "t_") {
			t.Errorf("database name %q: want t_ + 16 hex", n)
		}
	}
}

// TestMongoWithURIDropsDatabase points MONGODB_URI at an embedded server
// standing in for CI's MongoDB, and checks the database is dropped after the
// test. (Not parallel: t.Setenv.)
func TestMongoWithURIDropsDatabase(t *testing.T) {
	store, err := mongostore.Start(t.Context(), mongostore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	t.Setenv("MONGODB_URI", store.URI())

	var env testkit.MongoEnv
	t.Run("user", func(t *testing.T) {
		env = testkit.Mongo(t)
		if env.URI != store.URI() {
			t.Fatalf("URI %q, want MONGODB_URI %q", env.URI, store.URI())
		}
		db := testkit.MongoDatabase(t)
		if db.Name() == env.Database {
			t.Fatalf("two calls returned the same database %q", db.Name())
		}
		if _, err := db.Collection("c").InsertOne(t.Context(), bson.D{{Key: "a", Value: 1}}); err != nil {
			t.Fatalf("insert: %v", err)
		}
	})

	client, err := mongo.Connect(options.Client().ApplyURI(store.URI()))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	dbs, err := client.ListDatabaseNames(t.Context(), bson.D{})
	if err != nil {
		t.Fatalf("list databases: %v", err)
	}
	for _, name := range dbs {
		if strings.HasPrefix(name, "t_") {
			t.Errorf("database %q left behind after the test", name)
		}
	}
}

func TestRedisParallel(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			rdb := connectRedis(t, testkit.Redis(t))
			ctx := t.Context()
			if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
				t.Fatalf("fresh database: DBSIZE %d, %v; want 0", n, err)
			}
			if err := rdb.Set(ctx, "k", i, 150*time.Millisecond).Err(); err != nil {
				t.Fatalf("set: %v", err)
			}
			if v, err := rdb.Get(ctx, "k").Int(); err != nil || v != i {
				t.Fatalf("get: %d, %v", v, err)
			}
			time.Sleep(300 * time.Millisecond)
			if err := rdb.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("get after TTL: %v, want redis.Nil", err)
			}
		})
	}
}

// TestRedisParallelCallersGetDifferentDBs holds two Redis databases at the
// same time from parallel tests and checks they are distinct and isolated.
// With REDIS_URL set this exercises the lock protocol on the real server.
func TestRedisParallelCallersGetDifferentDBs(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		urls = map[string]string{}
		both sync.WaitGroup // both callers hold their database
	)
	both.Add(2)
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := testkit.Redis(t)
			mu.Lock()
			urls[name] = u
			mu.Unlock()
			rdb := connectRedis(t, u)
			if err := rdb.Set(t.Context(), "owner", name, 0).Err(); err != nil {
				t.Fatalf("set: %v", err)
			}
			both.Done()
			waitBoth := make(chan struct{})
			go func() { both.Wait(); close(waitBoth) }()
			select {
			case <-waitBoth:
			case <-time.After(10 * time.Second):
				// With -parallel=1 the partner never runs alongside.
				t.Skip("the other caller was not scheduled concurrently")
			}
			if got, err := rdb.Get(t.Context(), "owner").Result(); err != nil || got != name {
				t.Fatalf("owner = %q, %v; want %q (database shared?)", got, err, name)
			}
		})
	}
	t.Cleanup(func() {
		if len(urls) == 2 && urls["a"] == urls["b"] {
			t.Errorf("both callers got %s", urls["a"])
		}
		t.Logf("callers got %v", urls)
	})
}

// TestRedisLockProtocol runs the REDIS_URL path against a miniredis standing
// in for the shared server: it checks the lock keys, waiting while every
// database is taken, and the flush and release on cleanup. (Not parallel:
// t.Setenv.)
func TestRedisLockProtocol(t *testing.T) {
	shared, err := redisstore.Start(redisstore.Options{})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(shared.Close)
	t.Setenv("REDIS_URL", shared.URL())
	ctx := t.Context()
	lockDB := connectRedis(t, shared.URL())

	// Another binary holds DBs 1..15 except 7; 7 is left dirty by someone.
	for n := 1; n <= 15; n++ {
		if n != 7 {
			if err := lockDB.Set(ctx, fmt.Sprintf("testkit:lock:%d", n), "other", time.Minute).Err(); err != nil {
				t.Fatalf("pre-lock: %v", err)
			}
		}
	}
	db7 := connectRedis(t, strings.TrimSuffix(shared.URL(), "/0")+"/7")
	if err := db7.Set(ctx, "stale", "x", 0).Err(); err != nil {
		t.Fatalf("seed: %v", err)
	}

	var first, second string
	t.Run("first", func(t *testing.T) {
		first = testkit.Redis(t)
		if !strings.HasSuffix(first, "/7") {
			t.Fatalf("got %s, want DB 7 (the only free one)", first)
		}
		if n, err := db7.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Fatalf("DB 7 not flushed on claim: %d, %v", n, err)
		}
		if ttl, err := lockDB.PTTL(ctx, "testkit:lock:7").Result(); err != nil || ttl < 9*time.Minute {
			t.Fatalf("lock 7 PTTL %v, %v; want ~10m", ttl, err)
		}
		if err := db7.Set(ctx, "mine", "x", 0).Err(); err != nil {
			t.Fatalf("set: %v", err)
		}

		// Every database is taken now: a second caller waits until one is
		// released (here: DB 3, by the "other" holder after 300 ms).
		go func() {
			time.Sleep(300 * time.Millisecond)
			_ = lockDB.Del(context.Background(), "testkit:lock:3").Err()
		}()
		begin := time.Now()
		t.Run("second", func(t *testing.T) {
			second = testkit.Redis(t)
		})
		if waited := time.Since(begin); waited < 250*time.Millisecond {
			t.Errorf("second caller did not wait for a free database (%v)", waited)
		}
		if !strings.HasSuffix(second, "/3") {
			t.Errorf("second caller got %s, want DB 3", second)
		}
	})

	if n, err := lockDB.Exists(ctx, "testkit:lock:7", "testkit:lock:3").Result(); err != nil || n != 0 {
		t.Fatalf("locks not released after the tests: %d, %v", n, err)
	}
	if n, err := db7.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DB 7 not flushed on cleanup: %d, %v", n, err)
	}
}

func connectRedis(t *testing.T, u string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("parse %q: %v", u, err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A test name with '#' and '%' must not reach FerretDB's directory path.
func TestMongoOddTestName(t *testing.T) {
	t.Parallel()
	t.Run("50% off #1", func(t *testing.T) {
		t.Parallel()
		if _, err := testkit.MongoDatabase(t).Collection("c").InsertOne(t.Context(), bson.D{{Key: "a", Value: 1}}); err != nil {
			t.Fatalf("insert: %v", err)
		}
	})
}
