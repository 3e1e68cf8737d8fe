package docstore_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/docstore"
)

func TestIndexKeys(t *testing.T) {
	for _, tc := range []struct {
		got  bson.D
		want bson.D
	}{
		{docstore.ListIndex("account_livemode_id").Keys.(bson.D),
			bson.D{{Key: "account", Value: 1}, {Key: "livemode", Value: 1}, {Key: "_id", Value: -1}}},
		{docstore.ListIndex("x", "status", "debtor.country").Keys.(bson.D),
			bson.D{{Key: "account", Value: 1}, {Key: "livemode", Value: 1}, {Key: "status", Value: 1}, {Key: "debtor.country", Value: 1}, {Key: "_id", Value: -1}}},
		{docstore.Index("status_due_at", "status", "-due_at").Keys.(bson.D),
			bson.D{{Key: "status", Value: 1}, {Key: "due_at", Value: -1}}},
	} {
		if len(tc.got) != len(tc.want) {
			t.Fatalf("keys %v, want %v", tc.got, tc.want)
		}
		for i := range tc.want {
			if tc.got[i] != tc.want[i] {
				t.Fatalf("keys %v, want %v", tc.got, tc.want)
			}
		}
	}
	m := docstore.Index("event_endpoint", "event", "endpoint")
	m.Options.SetUnique(true)
	var o options.IndexOptions
	for _, set := range m.Options.List() {
		if err := set(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.Name == nil || *o.Name != "event_endpoint" || o.Unique == nil || !*o.Unique {
		t.Fatalf("options: name %v unique %v", o.Name, o.Unique)
	}
}
