// Package testkit gives tests of other modules a MongoDB database and a Redis
// database of their own: a real server when CI provides one (MONGODB_URI,
// REDIS_URL), an embedded one (FerretDB, miniredis) otherwise.
//
// Every helper isolates its caller, so tests may use them with t.Parallel().
// Import it from _test.go files only: it links FerretDB.
package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/embedded/mongostore"
)

// MongoEnv names a database that belongs to one test.
type MongoEnv struct {
	URI      string // mongodb:// URI of the server
	Database string // unique database name, "t_" + random hex
}

// cleanupTimeout bounds what Cleanup functions do over the network, since
// t.Context() is already canceled when they run.
const cleanupTimeout = 30 * time.Second

// Mongo returns a MongoDB server and a fresh database name for this test.
//
// If MONGODB_URI is set, that server is used and the database is dropped in
// t.Cleanup. Otherwise an embedded FerretDB is started in a new temporary
// directory and stopped in t.Cleanup, which then removes the directory.
// Disconnect your own clients first (defer, or a t.Cleanup registered after
// this call): FerretDB waits up to 3 s for open connections before it stops.
func Mongo(t testing.TB) MongoEnv {
	t.Helper()
	env := MongoEnv{Database: "t_" + randomHex(8)}

	if uri := os.Getenv("MONGODB_URI"); uri != "" {
		env.URI = uri
		client := connectMongo(t, uri)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			if err := client.Database(env.Database).Drop(ctx); err != nil {
				t.Errorf("testkit: drop database %s: %v", env.Database, err)
			}
			if err := client.Disconnect(ctx); err != nil {
				t.Errorf("testkit: disconnect from MONGODB_URI: %v", err)
			}
		})
		return env
	}

	// Not t.TempDir(): its name comes from the test name, which may contain
	// '#' or '%', and FerretDB cannot use such a path.
	dir, err := os.MkdirTemp("", "testkit-mongo-")
	if err != nil {
		t.Fatalf("testkit: create directory for embedded MongoDB: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("testkit: remove %s: %v", dir, err)
		}
	})
	store, err := mongostore.Start(t.Context(), mongostore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("testkit: start embedded MongoDB: %v", err)
	}
	// Registered after the directory's cleanup, so it runs before it: the
	// SQLite files are closed before the directory is removed.
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("testkit: stop embedded MongoDB: %v", err)
		}
	})
	env.URI = store.URI()
	return env
}

// MongoDatabase is Mongo plus a connected mongo-driver client; the client is
// disconnected in t.Cleanup (before the database is dropped or the embedded
// server stopped).
func MongoDatabase(t testing.TB) *mongo.Database {
	t.Helper()
	env := Mongo(t)
	client := connectMongo(t, env.URI)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := client.Disconnect(ctx); err != nil {
			t.Errorf("testkit: disconnect: %v", err)
		}
	})
	return client.Database(env.Database)
}

// connectMongo connects and pings, so an unreachable MONGODB_URI fails the
// test here with a clear message rather than later in the code under test.
func connectMongo(t testing.TB, uri string) *mongo.Client {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatalf("testkit: connect to %s: %v", uri, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := client.Ping(ctx, nil); err != nil {
		_ = client.Disconnect(context.Background())
		t.Fatalf("testkit: ping %s: %v", uri, err)
	}
	return client
}

// randomHex returns 2n random hex characters; crypto/rand keeps names unique
// across parallel tests and test binaries sharing one server.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails since Go 1.24 (it crashes the program instead)
	return hex.EncodeToString(b)
}
