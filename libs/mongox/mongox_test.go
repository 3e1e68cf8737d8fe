package mongox

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
)

type doc struct {
	ID       string `bson:"_id"`
	Account  string `bson:"account"`
	Livemode bool   `bson:"livemode"`
	Created  int64  `bson:"created"`
}

// seed inserts n documents for acct_a in test mode (plus noise for another account and mode)
// and returns acct_a's ids newest first.
func seed(t *testing.T, n int) ([]string, func(listing.Params) ([]string, bool)) {
	t.Helper()
	ctx := context.Background()
	env := testkit.Mongo(t)
	client, db, err := Connect(Config{URI: env.URI, Database: env.Database, AppName: "mongox-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	coll := db.Collection("things")
	gen := ids.NewGenerator(nil)
	var mine []string
	for i := 0; i < n; i++ {
		for _, d := range []doc{
			{ID: gen.New("th_"), Account: "acct_a", Created: int64(1000 + i)},
			{ID: gen.New("th_"), Account: "acct_b", Created: int64(1000 + i)},
			{ID: gen.New("th_"), Account: "acct_a", Livemode: true, Created: int64(1000 + i)},
		} {
			if _, err := coll.InsertOne(ctx, d); err != nil {
				t.Fatal(err)
			}
			if d.Account == "acct_a" && !d.Livemode {
				mine = append(mine, d.ID)
			}
		}
	}
	slices.Reverse(mine)
	page := func(p listing.Params) ([]string, bool) {
		docs, more, err := FindPage[doc](ctx, coll, bson.D{{Key: "account", Value: "acct_a"}, {Key: "livemode", Value: false}}, p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range docs {
			out = append(out, d.ID)
		}
		return out, more
	}
	return mine, page
}

func TestFindPageBothDirections(t *testing.T) {
	want, page := seed(t, 25)

	var got []string
	var mores []bool
	p := listing.Params{Limit: 10}
	for {
		ids, more := page(p)
		got = append(got, ids...)
		mores = append(mores, more)
		if !more {
			break
		}
		p = listing.Params{Limit: 10, StartingAfter: ids[len(ids)-1]}
	}
	if !slices.Equal(got, want) || fmt.Sprint(mores) != "[true true false]" {
		t.Fatalf("forward: got %v %v\nwant %v", got, mores, want)
	}

	got, mores = nil, nil
	p = listing.Params{Limit: 10, EndingBefore: want[len(want)-1]}
	for {
		ids, more := page(p)
		got = append(ids, got...)
		mores = append(mores, more)
		if !more {
			break
		}
		p = listing.Params{Limit: 10, EndingBefore: ids[0]}
	}
	if !slices.Equal(got, want[:24]) || fmt.Sprint(mores) != "[true true false]" {
		t.Fatalf("backward: got %v %v\nwant %v", got, mores, want[:24])
	}

	// Exactly a page left: has_more must be false, not a page that turns out empty.
	ids, more := page(listing.Params{Limit: 10, StartingAfter: want[14]})
	if !slices.Equal(ids, want[15:]) || more {
		t.Fatalf("last full page: %v %v", ids, more)
	}
}

func TestFindPageCreatedBounds(t *testing.T) {
	want, page := seed(t, 10)
	gte, lte := int64(1003), int64(1006)
	ids, more := page(listing.Params{Limit: 10, CreatedGTE: &gte, CreatedLTE: &lte})
	// want is newest first: created 1009 at index 0, so 1006..1003 are indexes 3..6.
	if !slices.Equal(ids, want[3:7]) || more {
		t.Fatalf("created bounds: got %v %v, want %v", ids, more, want[3:7])
	}
}

func TestMonitorTracesCommands(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	env := testkit.Mongo(t)
	client, db, err := Connect(Config{URI: env.URI, Database: env.Database, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	for _, s := range rec.Ended() {
		if s.Name() == "mongodb.insert" {
			if s.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Fatal("mongodb.insert is not a child of the caller's span")
			}
			return
		}
	}
	t.Fatalf("no mongodb.insert span among %d spans", len(rec.Ended()))
}

// A service declares its indexes at every start; the second time they all exist already.
func TestEnsureIndexesTwice(t *testing.T) {
	db := testkit.MongoDatabase(t)
	coll := db.Collection("things")
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "account", Value: 1}, {Key: "livemode", Value: 1}, {Key: "_id", Value: -1}}},
		{Keys: bson.D{{Key: "ref", Value: 1}}, Options: options.Index().SetUnique(true)},
	}
	for i := 0; i < 2; i++ {
		if err := EnsureIndexes(context.Background(), coll, models...); err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
	}
}

// Unique indexes are created everywhere (they enforce a rule); the others only where the server
// uses them for queries.
func TestEnsureIndexesCreatesWhatTheStoreUses(t *testing.T) {
	ctx := context.Background()
	db := testkit.MongoDatabase(t)
	coll := db.Collection("indexed")
	unique := mongo.IndexModel{Keys: bson.D{{Key: "ref", Value: 1}}, Options: options.Index().SetName("ref").SetUnique(true)}
	list := mongo.IndexModel{Keys: bson.D{{Key: "account", Value: 1}, {Key: "_id", Value: -1}}, Options: options.Index().SetName("account_id")}
	if err := EnsureIndexes(ctx, coll, unique, list); err != nil {
		t.Fatal(err)
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range specs {
		names[s.Name] = true
	}
	caps, err := Detect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !names["ref"] || names["account_id"] != caps.IndexedQueries {
		t.Fatalf("indexes %v on a store with IndexedQueries = %v", names, caps.IndexedQueries)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "ref", Value: "a"}}, bson.D{{Key: "ref", Value: "a"}}}); !IsDuplicateKey(err) {
		t.Fatalf("second document with the same ref: %v, want a duplicate key error", err)
	}
}

func TestCapabilitiesOfTheEmbeddedStore(t *testing.T) {
	db := testkit.MongoDatabase(t)
	srv := NewServer(db)
	atomic := testkit.AtomicConditionalWrites(t, db)
	if srv.Capabilities(context.Background()).AtomicConditionalWrites != atomic {
		t.Fatalf("Detect disagrees with testkit about the store")
	}
	f := srv.VersionFilter(context.Background(), "x", "version", 3)
	if atomic && len(f) != 2 || !atomic && len(f) != 1 {
		t.Fatalf("VersionFilter = %v on a store with atomic conditional writes = %v", f, atomic)
	}
}
