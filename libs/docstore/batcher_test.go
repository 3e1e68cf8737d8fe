package docstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/embedded/testkit"
)

// Concurrent writes are grouped into commands, and each writer still learns its own outcome.
func TestBatcherReportsEachWrite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	coll := testkit.MongoDatabase(t).Collection("batched")
	const n = 60
	for i := 0; i < n; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("old%02d", i)}, {Key: "v", Value: 0}}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBatcher(coll)
	type outcome struct {
		what string
		err  error
	}
	results := make([]outcome, 4*n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		writes := []struct {
			what  string
			model mongo.WriteModel
		}{
			{"replace", mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: fmt.Sprintf("old%02d", i)}}).SetReplacement(bson.D{{Key: "v", Value: i}})},
			{"insert", mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: fmt.Sprintf("new%02d", i)}})},
			{"duplicate", mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: fmt.Sprintf("old%02d", i)}})},
			{"missing", mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: fmt.Sprintf("none%02d", i)}}).SetReplacement(bson.D{{Key: "v", Value: i}})},
		}
		for j, w := range writes {
			wg.Go(func() { results[4*i+j] = outcome{w.what, b.write(ctx, w.model)} })
		}
	}
	wg.Wait()
	for _, r := range results {
		var ok bool
		switch r.what {
		case "replace", "insert":
			ok = r.err == nil
		case "duplicate":
			ok = mongo.IsDuplicateKeyError(r.err)
		case "missing":
			ok = errors.Is(r.err, errNoMatch)
		}
		if !ok {
			t.Errorf("%s: %v", r.what, r.err)
		}
	}
	for i := 0; i < n; i++ {
		var d struct{ V int }
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("old%02d", i)}}).Decode(&d); err != nil || d.V != i {
			t.Fatalf("old%02d = %+v, %v", i, d, err)
		}
	}
	if c, err := coll.CountDocuments(ctx, bson.D{}); err != nil || c != 2*n {
		t.Fatalf("%d documents (%v), want %d", c, err, 2*n)
	}
}

// Several writers each queue a set of inserts at once (a fan-out's deliveries); the sets are
// grouped into commands and every insert reports its own outcome, in its writer's order.
func TestBatcherWriteAllReportsEachInsert(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	coll := testkit.MongoDatabase(t).Collection("batched_sets")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "w03-07"}}); err != nil {
		t.Fatal(err)
	}
	b := newBatcher(coll)
	const writers, per = 16, 20
	results := make([][]error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		models := make([]mongo.WriteModel, per)
		for i := range models {
			models[i] = mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: fmt.Sprintf("w%02d-%02d", w, i)}})
		}
		wg.Go(func() { results[w] = b.writeAll(ctx, models) })
	}
	wg.Wait()
	for w, errs := range results {
		if len(errs) != per {
			t.Fatalf("writer %d: %d outcomes, want %d", w, len(errs), per)
		}
		for i, err := range errs {
			if dup := w == 3 && i == 7; dup != mongo.IsDuplicateKeyError(err) || (!dup && err != nil) {
				t.Errorf("writer %d insert %d: %v", w, i, err)
			}
		}
	}
	if c, err := coll.CountDocuments(ctx, bson.D{}); err != nil || c != writers*per {
		t.Fatalf("%d documents (%v), want %d", c, err, writers*per)
	}
}

// An empty set (a fan-out with no subscriber) returns at once and leaves the batcher usable.
func TestBatcherWriteAllOfNothing(t *testing.T) {
	t.Parallel()
	coll := testkit.MongoDatabase(t).Collection("batched_nothing")
	b := newBatcher(coll)
	if errs := b.writeAll(t.Context(), nil); len(errs) != 0 {
		t.Fatalf("WriteAll(nil) = %v", errs)
	}
	if err := b.write(t.Context(), mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: "after"}})); err != nil {
		t.Fatal(err)
	}
}
