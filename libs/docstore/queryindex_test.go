package docstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/docstore"
	"rentalplatform/libs/listing"
)

// item is a document with a field of every kind the platform's queries filter on.
type item struct {
	docstore.Meta `bson:",inline"`
	Account       string     `bson:"account"`
	Livemode      bool       `bson:"livemode"`
	Status        string     `bson:"status"`
	Amount        int64      `bson:"amount"`
	Created       int64      `bson:"created"`
	DueAt         *time.Time `bson:"due_at"`
	Claim         *claim     `bson:"claim"`
	Country       string     `bson:"country,omitempty"`
	Tags          []string   `bson:"tags"`
	Note          string     `bson:"note"` // in no index
}

type claim struct {
	At time.Time `bson:"at"`
}

var itemIndexes = []mongo.IndexModel{
	docstore.ListIndex("account_livemode_id"),
	docstore.ListIndex("account_livemode_status_id", "status"),
	docstore.ListIndex("account_livemode_country_id", "country"),
	docstore.ListIndex("account_livemode_tags_id", "tags"),
	docstore.Index("status_due_at", "status", "due_at"),
	docstore.Index("status_claim_at", "status", "claim.at"),
	docstore.Index("amount", "amount"),
}

func newItems(t *testing.T, raw *mongo.Database) *docstore.Collection[item] {
	t.Helper()
	db, err := docstore.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	c := docstore.NewCollection[item](db, "items", docstore.Options{})
	if err := c.EnsureIndexes(t.Context(), itemIndexes...); err != nil {
		t.Fatal(err)
	}
	return c
}

var base = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// randomItems returns n random items, it_00000 on.
func randomItems(r *rand.Rand, n int) []item {
	docs := make([]item, n)
	for i := range docs {
		docs[i] = randomItem(r, i)
	}
	return docs
}

// randomItem makes the i-th of a set of items whose fields repeat often enough for every
// filter to match some.
func randomItem(r *rand.Rand, i int) item {
	it := item{
		Meta:     docstore.Meta{ID: fmt.Sprintf("it_%05d", i)},
		Account:  []string{"acct_a", "acct_b", "acct_c"}[r.IntN(3)],
		Livemode: r.IntN(4) == 0,
		Status:   []string{"pending", "processing", "succeeded", "failed"}[r.IntN(4)],
		Amount:   int64(r.IntN(50)) * 100,
		Created:  base.Unix() + int64(i),
		Note:     fmt.Sprintf("note %d", r.IntN(5)),
	}
	if r.IntN(3) > 0 {
		it.DueAt = docstore.TimePtr(base.Add(time.Duration(i) * time.Minute))
	}
	if r.IntN(4) == 0 {
		it.Claim = &claim{At: base.Add(time.Duration(i) * time.Second)}
	}
	if r.IntN(2) == 0 {
		it.Country = []string{"NL", "DE", "FR"}[r.IntN(3)]
	}
	for range r.IntN(3) {
		it.Tags = append(it.Tags, []string{"red", "green", "blue"}[r.IntN(3)])
	}
	return it
}

// heldQueries are the queries compared between the collection (its index, on the embedded
// store) and the store evaluating them itself.
func heldQueries() []struct {
	name   string
	filter bson.D
	opts   *options.FindOptionsBuilder
} {
	due := base.Add(200 * time.Minute)
	return []struct {
		name   string
		filter bson.D
		opts   *options.FindOptionsBuilder
	}{
		{"one owner, newest first", bson.D{{Key: "account", Value: "acct_a"}, {Key: "livemode", Value: false}}, options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(11)},
		{"status, oldest first", bson.D{{Key: "account", Value: "acct_b"}, {Key: "livemode", Value: false}, {Key: "status", Value: "failed"}}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})},
		{"two filters", bson.D{{Key: "account", Value: "acct_c"}, {Key: "livemode", Value: true}, {Key: "status", Value: "pending"}, {Key: "country", Value: "NL"}}, options.Find()},
		{"missing field equals null", bson.D{{Key: "country", Value: nil}, {Key: "status", Value: "succeeded"}}, options.Find()},
		{"$ne on a missing field", bson.D{{Key: "country", Value: bson.D{{Key: "$ne", Value: "NL"}}}, {Key: "account", Value: "acct_a"}}, options.Find()},
		{"$in", bson.D{{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{"pending", "processing"}}}}}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})},
		{"$nin", bson.D{{Key: "status", Value: bson.D{{Key: "$nin", Value: []string{"pending", "processing"}}}}, {Key: "livemode", Value: true}}, options.Find()},
		{"an array field", bson.D{{Key: "tags", Value: "red"}, {Key: "account", Value: "acct_b"}}, options.Find()},
		{"a range on a number", bson.D{{Key: "amount", Value: bson.D{{Key: "$gte", Value: 1000}, {Key: "$lt", Value: int32(2500)}}}}, options.Find()},
		{"a created range", bson.D{{Key: "created", Value: bson.D{{Key: "$gte", Value: base.Unix() + 100}, {Key: "$lte", Value: base.Unix() + 150}}}}, options.Find()},
		{"due, by due date, limited", bson.D{{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{"pending", "processing"}}}}, {Key: "due_at", Value: bson.D{{Key: "$lte", Value: due}}}}, options.Find().SetSort(bson.D{{Key: "due_at", Value: 1}}).SetLimit(7)},
		{"the reconciler's $or", bson.D{
			{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{"pending", "processing"}}}},
			{Key: "$or", Value: bson.A{
				bson.D{{Key: "claim", Value: nil}, {Key: "due_at", Value: bson.D{{Key: "$lte", Value: due}}}},
				bson.D{{Key: "claim.at", Value: bson.D{{Key: "$lte", Value: base.Add(100 * time.Second)}}}},
			}},
		}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})},
		{"$exists", bson.D{{Key: "country", Value: bson.D{{Key: "$exists", Value: true}}}, {Key: "amount", Value: bson.D{{Key: "$gt", Value: 4000}}}}, options.Find()},
		{"a cursor", bson.D{{Key: "account", Value: "acct_a"}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: "it_00200"}}}}, options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(5)},
		{"ids only", bson.D{{Key: "status", Value: "failed"}, {Key: "due_at", Value: bson.D{{Key: "$lte", Value: due}}}}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetSort(bson.D{{Key: "due_at", Value: 1}})},
	}
}

// fromStore runs a query on the store itself (what the collection does where it holds no
// index), with the collection's live condition, and returns the _ids found in order.
func fromStore(t *testing.T, raw *mongo.Database, filter bson.D, opts *options.FindOptionsBuilder) []string {
	t.Helper()
	f := append(bson.D{}, filter...)
	db, err := docstore.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := db.Collection("items").Find(t.Context(), f, opts)
	if err != nil {
		t.Fatal(err)
	}
	var docs []item
	if err := cur.All(t.Context(), &docs); err != nil {
		t.Fatal(err)
	}
	return idsOfItems(docs)
}

func idsOfItems(docs []item) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

// The collection answers its queries as the store would: every filter and order the platform
// uses, over documents inserted, changed, deleted and purged, compared with the store's own
// evaluation of the same query. On the embedded store the answers come from the collection's
// index (and none of these queries is left to the store); on MongoDB from the store.
func TestQueriesAnsweredAsTheStoreWould(t *testing.T) {
	t.Parallel()
	raw := testkit.MongoDatabase(t)
	c := newItems(t, raw)
	ctx := t.Context()
	r := rand.New(rand.NewPCG(1, 2))
	docs := randomItems(r, 400)
	// Half stored before the first query (the index is built by a scan), half after.
	if _, err := c.InsertAll(ctx, docs[:200]); err != nil {
		t.Fatal(err)
	}
	compare := func(stage string) {
		t.Helper()
		for _, q := range heldQueries() {
			got, err := c.Find(ctx, q.filter, q.opts)
			if err != nil {
				t.Fatalf("%s, %s: %v", stage, q.name, err)
			}
			want := fromStore(t, raw, q.filter, q.opts)
			if same := slices.Equal(idsOfItems(got), want); !same && (sorted(q.opts) || !sameSet(idsOfItems(got), want)) {
				t.Errorf("%s, %s: the collection found %v; the store %v", stage, q.name, idsOfItems(got), want)
			}
		}
	}
	compare("after a scan")
	if _, err := c.InsertAll(ctx, docs[200:]); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i += 7 {
		id := docs[i].ID
		if _, err := c.Update(ctx, id, func(it *item) error {
			it.Status, it.Country, it.Claim = "processing", "", &claim{At: base}
			it.Tags = append(it.Tags, "blue")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3; i < 400; i += 11 {
		if err := c.Delete(ctx, docs[i].ID); err != nil {
			t.Fatal(err)
		}
	}
	purged, err := c.DeleteMany(ctx, bson.D{{Key: "account", Value: "acct_c"}, {Key: "amount", Value: bson.D{{Key: "$lt", Value: 500}}}})
	if err != nil || purged == 0 {
		t.Fatalf("purge: %d, %v", purged, err)
	}
	compare("after writes")

	// A purge by a filter the index does not evaluate drops it; it is built again.
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "note", Value: "note 1"}}); err != nil {
		t.Fatal(err)
	}
	compare("after a purge on a field it does not hold")

	// Pages, both directions, as lists read them.
	filter := bson.D{{Key: "account", Value: "acct_a"}, {Key: "livemode", Value: false}}
	all := fromStore(t, raw, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}))
	var walked []string
	p := listing.Params{Limit: 10}
	for {
		page, more, err := c.Page(ctx, filter, p)
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, idsOfItems(page)...)
		if !more {
			break
		}
		p.StartingAfter = page[len(page)-1].ID
	}
	if !slices.Equal(walked, all) {
		t.Errorf("pages forward: %v; want %v", walked, all)
	}
	back, _, err := c.Page(ctx, filter, listing.Params{Limit: 3, EndingBefore: all[10]})
	if err != nil || !slices.Equal(idsOfItems(back), all[7:10]) {
		t.Errorf("a page ending before %s: %v (%v); want %v", all[10], idsOfItems(back), err, all[7:10])
	}
	if n := c.Unserved(); len(n) > 0 {
		t.Errorf("queries left to the store: %v", n)
	}

	// A query on a field in no index is left to the store, and answered all the same.
	got, err := c.Find(ctx, bson.D{{Key: "note", Value: "note 2"}, {Key: "status", Value: "failed"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := fromStore(t, raw, bson.D{{Key: "note", Value: "note 2"}, {Key: "status", Value: "failed"}}, options.Find()); !sameSet(idsOfItems(got), want) {
		t.Errorf("a filter on note: %v; want %v", idsOfItems(got), want)
	}
	if n := c.Unserved(); n != nil && len(n) != 1 {
		t.Errorf("left to the store: %v; want the filter on note", n)
	}
}

// sorted reports whether a query has an order (without one, the store's is its own).
func sorted(opts *options.FindOptionsBuilder) bool {
	var o options.FindOptions
	for _, set := range opts.List() {
		_ = set(&o)
	}
	return o.Sort != nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// Writes that race the scan building the index are not lost, and a write that landed without
// an answer is read again before the next query.
func TestQueryIndexFollowsWritesDuringItsScan(t *testing.T) {
	t.Parallel()
	raw := testkit.MongoDatabase(t)
	c := newItems(t, raw)
	ctx := t.Context()
	r := rand.New(rand.NewPCG(3, 4))
	docs := randomItems(r, 1500)
	if _, err := c.InsertAll(ctx, docs); err != nil {
		t.Fatal(err)
	}
	query := bson.D{{Key: "status", Value: "failed"}}
	var wg sync.WaitGroup
	wg.Go(func() {
		// Every document changes status while the first query scans.
		for i := range 300 {
			id := docs[r.IntN(len(docs))].ID
			if i%10 == 0 {
				if err := c.Delete(ctx, id); err != nil {
					t.Error(err)
				}
				continue
			}
			if _, err := c.Update(ctx, id, func(it *item) error { it.Status = "failed"; return nil }); err != nil && !errors.Is(err, docstore.ErrNotFound) {
				t.Error(err)
			}
		}
	})
	if _, err := c.Find(ctx, query); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	got, err := c.Find(ctx, query, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := fromStore(t, raw, query, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})); !slices.Equal(idsOfItems(got), want) {
		t.Errorf("after writes during the scan: %d found, the store has %d", len(got), len(want))
	}

	// An insert that landed, then failed: its document is found.
	docstore.LandThenFail(c, errors.New("connection cut"))
	late := randomItem(r, 5000)
	late.Status = "failed"
	if _, err := c.Insert(ctx, late); err == nil {
		t.Fatal("the insert reported no error")
	}
	got, err = c.Find(ctx, query, options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(1))
	if err != nil || len(got) != 1 || got[0].ID != late.ID {
		t.Errorf("after an insert without an answer: %v, %v; want %s", idsOfItems(got), err, late.ID)
	}
}

// What the index costs and saves: a page of one account's newest documents among 10,000 of
// three accounts (go test -bench QueryIndex ./docstore/).
func BenchmarkQueryIndexPage(b *testing.B) {
	raw := testkit.MongoDatabase(b)
	db, err := docstore.Open(context.Background(), raw)
	if err != nil {
		b.Fatal(err)
	}
	c := docstore.NewCollection[item](db, "items", docstore.Options{})
	if err := c.EnsureIndexes(context.Background(), itemIndexes...); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 10000; i += 500 {
		batch := make([]item, 500)
		for j := range batch {
			batch[j] = randomItem(r, i+j)
		}
		if _, err := c.InsertAll(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	filter := bson.D{{Key: "account", Value: "acct_a"}, {Key: "livemode", Value: false}, {Key: "status", Value: "failed"}}
	for _, s := range []struct {
		name string
		c    *docstore.Collection[item]
	}{
		{"collection", c},
		{"store", docstore.NewCollection[item](docstore.AsMongoDB(db), "items", docstore.Options{})},
	} {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				page, _, err := s.c.Page(context.Background(), filter, listing.Params{Limit: 10})
				if err != nil || len(page) != 10 {
					b.Fatal(len(page), err)
				}
			}
		})
	}
}
