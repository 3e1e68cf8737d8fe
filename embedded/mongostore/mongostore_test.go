package mongostore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/embedded/mongostore"
)

func start(t testing.TB, dir string) *mongostore.Store {
	t.Helper()
	s, err := mongostore.Start(t.Context(), mongostore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

func connect(t testing.TB, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

type item struct {
	ID   string `bson:"_id"`
	Sku  string `bson:"sku"`
	Rank int    `bson:"rank"`
}

func TestRoundTripAndRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// A directory that does not exist yet: Start must create it.
	dir := filepath.Join(t.TempDir(), "nested", "data")

	s := start(t, dir)
	c := connect(t, s.URI())
	coll := c.Database("shop").Collection("items")

	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "sku", Value: 1}},
		Options: options.Index().SetUnique(true),
	}); err != nil {
		t.Fatalf("create index: %v", err)
	}
	for i, sku := range []string{"a", "b", "c"} {
		if _, err := coll.InsertOne(ctx, item{ID: "it_" + sku, Sku: sku, Rank: i}); err != nil {
			t.Fatalf("insert %s: %v", sku, err)
		}
	}

	_, err := coll.InsertOne(ctx, item{ID: "it_dup", Sku: "a"})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate sku: got %v, want E11000", err)
	}

	var got item
	if err := coll.FindOne(ctx, bson.D{{Key: "sku", Value: "b"}}).Decode(&got); err != nil {
		t.Fatalf("find: %v", err)
	}
	if got != (item{ID: "it_b", Sku: "b", Rank: 1}) {
		t.Fatalf("find: got %+v", got)
	}

	if err := c.Disconnect(ctx); err != nil {
		t.Fatalf("disconnect: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}

	// Restart on the same directory: data and the unique index survive.
	s2 := start(t, dir)
	defer func() {
		if err := s2.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	c2 := connect(t, s2.URI())
	defer func() { _ = c2.Disconnect(context.WithoutCancel(ctx)) }()
	coll2 := c2.Database("shop").Collection("items")

	n, err := coll2.CountDocuments(ctx, bson.D{})
	if err != nil || n != 3 {
		t.Fatalf("count after restart: %d, %v; want 3", n, err)
	}
	if _, err := coll2.InsertOne(ctx, item{ID: "it_dup2", Sku: "c"}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate after restart: got %v, want E11000", err)
	}
}

func TestParallelStores(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"one", "two", "three"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := start(t, t.TempDir())
			defer func() { _ = s.Close() }()
			c := connect(t, s.URI())
			defer func() { _ = c.Disconnect(context.Background()) }()
			if _, err := c.Database("db").Collection("c").InsertOne(t.Context(), bson.D{{Key: "n", Value: name}}); err != nil {
				t.Fatalf("insert: %v", err)
			}
		})
	}
}

func TestStartRequiresDir(t *testing.T) {
	t.Parallel()
	if _, err := mongostore.Start(t.Context(), mongostore.Options{}); err == nil {
		t.Fatal("Start without Dir: want error")
	}
}

// FerretDB would silently put the files elsewhere for such paths.
func TestStartRejectsURISpecialCharacters(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"x#y", "q?r", "p%20s"} {
		if s, err := mongostore.Start(t.Context(), mongostore.Options{Dir: filepath.Join(t.TempDir(), name)}); err == nil {
			_ = s.Close()
			t.Errorf("Start in %q: want error", name)
		}
	}
}
