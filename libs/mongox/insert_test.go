package mongox_test

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/mongox"
)

func TestInsertNewReportsWhatWasAlreadyStored(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	coll := testkit.MongoDatabase(t).Collection("insert_new")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "pair", Value: 1}}, Options: options.Index().SetUnique(true),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "b"}, {Key: "pair", Value: "b"}}); err != nil {
		t.Fatal(err)
	}
	got, err := mongox.InsertNew(ctx, coll, []any{
		bson.D{{Key: "_id", Value: "a"}, {Key: "pair", Value: "a"}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "pair", Value: "b"}}, // same _id
		bson.D{{Key: "_id", Value: "c"}, {Key: "pair", Value: "b"}}, // unique twin of b
		bson.D{{Key: "_id", Value: "d"}, {Key: "pair", Value: "d"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
		t.Fatalf("InsertNew = %v, want %v", got, want)
	}
	n, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil || n != 3 {
		t.Fatalf("stored %d documents (%v), want 3", n, err)
	}
	if got, err := mongox.InsertNew(ctx, coll, nil); err != nil || len(got) != 0 {
		t.Fatalf("InsertNew(nothing) = %v, %v", got, err)
	}
}
