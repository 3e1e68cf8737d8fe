package docstore

import (
	"fmt"
	"reflect"
	"strings"
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
	for _, bad := range []any{"text", bson.Binary{Subtype: 0, Data: []byte{1}}, bson.Binary{Subtype: packedCompressedSubtype, Data: []byte{1, 2, 3}}} {
		raw, _ = bson.Marshal(bson.D{{Key: "_id", Value: "x_4"}, {Key: "outbox", Value: bad}})
		if err := bson.Unmarshal(raw, &back); err == nil {
			t.Errorf("outbox %v decoded without an error", bad)
		}
		if _, err := entryIDs(bson.Raw(raw).Lookup("outbox")); err == nil {
			t.Errorf("entryIDs(%v) without an error", bad)
		}
	}
}

// The embedded store keeps a packed array of compressAbove bytes or more compressed: it reads
// back the same, and its entries' ids read without decoding them; a smaller one, and any other
// binary value, are stored as they are.
func TestPackedCompressedForm(t *testing.T) {
	type doc struct {
		ID     string      `bson:"_id"`
		Outbox Entries     `bson:"outbox,omitempty"`
		Blob   bson.Binary `bson:"blob"`
		N      int         `bson:"n"`
	}
	var entries Entries
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("evt_%d", i)
		ids = append(ids, id)
		entries = append(entries, outbox.Doc{ID: id, Type: "payment_request.succeeded", Account: "acct_1", Created: int64(1790000000 + i),
			Object: fmt.Sprintf(`{"id":"preq_%d","object":"payment_request","status":"succeeded","description":%q}`, i, strings.Repeat("rent ", 20))})
	}
	blob := bson.Binary{Subtype: 0, Data: []byte(strings.Repeat("b", 2*compressAbove))}
	for _, tt := range []struct {
		name    string
		entries Entries
		subtype byte
	}{
		{"large", entries, packedCompressedSubtype},
		{"small", entries[:1], packedSubtype},
	} {
		d := doc{ID: "x_1", Outbox: tt.entries, Blob: blob, N: 7}
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := compressPacked(raw)
		if err != nil {
			t.Fatal(err)
		}
		v := stored.Lookup("outbox")
		sub, data := v.Binary()
		if sub != tt.subtype {
			t.Fatalf("%s: stored with subtype %#x, want %#x", tt.name, sub, tt.subtype)
		}
		if _, plain := bson.Raw(raw).Lookup("outbox").Binary(); tt.subtype == packedCompressedSubtype && len(data) >= len(plain)/2 {
			t.Errorf("%s: %d bytes compressed from %d", tt.name, len(data), len(plain))
		}
		var back doc
		if err := bson.Unmarshal(stored, &back); err != nil || !reflect.DeepEqual(back, d) {
			t.Fatalf("%s: round trip: %v %+v", tt.name, err, back)
		}
		if got, err := entryIDs(v); err != nil || !reflect.DeepEqual(got, ids[:len(tt.entries)]) {
			t.Fatalf("%s: entryIDs = %v, %v", tt.name, got, err)
		}
	}
}
