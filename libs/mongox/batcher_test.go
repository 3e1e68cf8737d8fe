package mongox_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/mongox"
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
	b := mongox.NewBatcher(coll)
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
			wg.Go(func() { results[4*i+j] = outcome{w.what, b.Write(ctx, w.model)} })
		}
	}
	wg.Wait()
	for _, r := range results {
		var ok bool
		switch r.what {
		case "replace", "insert":
			ok = r.err == nil
		case "duplicate":
			ok = mongox.IsDuplicateKey(r.err)
		case "missing":
			ok = errors.Is(r.err, mongox.ErrNoMatch)
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
