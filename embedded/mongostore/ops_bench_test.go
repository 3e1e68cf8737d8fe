package mongostore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// BenchmarkOps measures what single operations and their batched forms cost on the embedded
// store, over a collection of 5,000 documents of about 600 bytes (the size of a webhook
// delivery): the figures the services' write paths are designed around.
func BenchmarkOps(b *testing.B) {
	st := start(b, b.TempDir())
	c := connect(b, st.URI())
	ctx := context.Background()
	coll := c.Database("bench").Collection("docs")
	pad := strings.Repeat("x", 400)
	doc := func(id string, v int) bson.D {
		return bson.D{{Key: "_id", Value: id}, {Key: "event", Value: "evt_" + id}, {Key: "status", Value: "pending"}, {Key: "v", Value: v}, {Key: "pad", Value: pad}}
	}
	var seed []any
	for i := 0; i < 5000; i++ {
		seed = append(seed, doc(fmt.Sprintf("seed%05d", i), 0))
	}
	if _, err := coll.InsertMany(ctx, seed); err != nil {
		b.Fatal(err)
	}
	// Let the store add its _id write-path index to the new table (see idindex.go), as it has
	// in steady state.
	time.Sleep(2 * time.Second)
	n := 0
	next := func() string { n++; return fmt.Sprintf("new%08d", n) }

	b.Run("InsertOne", func(b *testing.B) {
		for b.Loop() {
			if _, err := coll.InsertOne(ctx, doc(next(), 0)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("InsertMany20/doc", func(b *testing.B) {
		for i := 0; i < b.N; i += 20 {
			var docs []any
			for j := 0; j < 20; j++ {
				docs = append(docs, doc(next(), 0))
			}
			if _, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FindOneByID", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("seed%05d", i%5000)}}).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReplaceOneByID", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			id := fmt.Sprintf("seed%05d", i%5000)
			if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc(id, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UpdateOneSetByID", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			id := fmt.Sprintf("seed%05d", i%5000)
			if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: i}}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BulkReplace20/doc", func(b *testing.B) {
		i := 0
		for k := 0; k < b.N; k += 20 {
			var models []mongo.WriteModel
			for j := 0; j < 20; j++ {
				i++
				id := fmt.Sprintf("seed%05d", i%5000)
				models = append(models, mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: id}}).SetReplacement(doc(id, i)))
			}
			if _, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FindIn20/doc", func(b *testing.B) {
		i := 0
		for k := 0; k < b.N; k += 20 {
			var ids []string
			for j := 0; j < 20; j++ {
				i++
				ids = append(ids, fmt.Sprintf("seed%05d", i%5000))
			}
			cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
			if err != nil {
				b.Fatal(err)
			}
			var out []bson.Raw
			if err := cur.All(ctx, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
