package docstore

import (
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/outbox"
)

func TestEntriesStoredForm(t *testing.T) {
	entries := Entries{
		{ID: "evt_1", Type: "x.created", Account: "acct_1", Object: `{"id":"x_1","note":"a \"quoted\" word"}`},
		{ID: "evt_2", Type: "x.updated", Account: "acct_1", Object: `{"id":"x_1"}`, Previous: `{"note":null}`},
	}
	type doc struct {
		ID     string  `bson:"_id"`
		Outbox Entries `bson:"outbox,omitempty"`
	}
	raw, err := bson.Marshal(doc{ID: "x_1", Outbox: entries})
	if err != nil {
		t.Fatal(err)
	}
	v := bson.Raw(raw).Lookup("outbox")
	if v.Type != bson.TypeBinary {
		t.Fatalf("stored as %s, want one binary value", v.Type)
	}
	var back doc
	if err := bson.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back.Outbox, entries) {
		t.Fatalf("round trip: %v %+v", err, back.Outbox)
	}
	if ids, err := entryIDs(v); err != nil || !reflect.DeepEqual(ids, []string{"evt_1", "evt_2"}) {
		t.Fatalf("entryIDs(binary) = %v, %v", ids, err)
	}

	// An outbox stored as an array (before this form) reads the same.
	legacy, err := bson.Marshal(struct {
		ID     string       `bson:"_id"`
		Outbox []outbox.Doc `bson:"outbox"`
	}{"x_1", entries})
	if err != nil {
		t.Fatal(err)
	}
	back = doc{}
	if err := bson.Unmarshal(legacy, &back); err != nil || !reflect.DeepEqual(back.Outbox, entries) {
		t.Fatalf("legacy array: %v %+v", err, back.Outbox)
	}
	if ids, err := entryIDs(bson.Raw(legacy).Lookup("outbox")); err != nil || !reflect.DeepEqual(ids, []string{"evt_1", "evt_2"}) {
		t.Fatalf("entryIDs(array) = %v, %v", ids, err)
	}

	// Empty: left out; null and missing read as empty; anything else is an error.
	raw, _ = bson.Marshal(doc{ID: "x_2"})
	if bson.Raw(raw).Lookup("outbox").Type != 0 {
		t.Fatalf("an empty outbox is stored: %s", bson.Raw(raw))
	}
	raw, _ = bson.Marshal(bson.D{{Key: "_id", Value: "x_3"}, {Key: "outbox", Value: nil}})
	if err := bson.Unmarshal(raw, &back); err != nil || back.Outbox != nil {
		t.Fatalf("null outbox: %v %+v", err, back.Outbox)
	}
	for _, bad := range []any{"text", bson.Binary{Subtype: 0, Data: []byte{1}}} {
		raw, _ = bson.Marshal(bson.D{{Key: "_id", Value: "x_4"}, {Key: "outbox", Value: bad}})
		if err := bson.Unmarshal(raw, &back); err == nil {
			t.Errorf("outbox %v decoded without an error", bad)
		}
		if _, err := entryIDs(bson.Raw(raw).Lookup("outbox")); err == nil {
			t.Errorf("entryIDs(%v) without an error", bad)
		}
	}
}
