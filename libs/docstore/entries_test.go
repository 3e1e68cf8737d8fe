package docstore

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"rentalplatform/libs/outbox"
)

func strPtr(s string) *string { return &s }

// entriesCases are outboxes with every field set, none set, and the pointers' three states.
func entriesCases() map[string]Entries {
	full := outbox.Doc{
		ID: "evt_1", Type: "payment_request.succeeded", Account: "acct_1", APIVersion: "2024-06-01",
		Created: 1_790_000_000, Livemode: true, RequestID: strPtr("req_1"), IdempotencyKey: strPtr("key ü 1"),
		Object: `{"id":"pr_1","note":"a \"quoted\" word","amount":1200}`, Previous: `{"status":"processing"}`,
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "k=v",
		DestinationURL: "https://127.0.0.1:8443/hook", DestinationSecret: "whsec_x",
	}
	return map[string]Entries{
		"one full":  {full},
		"bare":      {{}},
		"empty ptr": {{ID: "evt_2", RequestID: strPtr(""), IdempotencyKey: nil, Created: -5}},
		"several":   {full, {ID: "evt_3", Type: "x.created", Object: strings.Repeat("é", 3000)}, {ID: "evt_4"}},
	}
}

// The hand-written codec stores what the driver's reflection stores, byte for byte, and reads
// back what it reads.
func TestEntriesCodecMatchesDriver(t *testing.T) {
	for name, entries := range entriesCases() {
		t.Run(name, func(t *testing.T) {
			typ, got, err := entries.MarshalBSONValue()
			if err != nil {
				t.Fatal(err)
			}
			wantTyp, want, err := Packed[outbox.Doc](entries).MarshalBSONValue()
			if err != nil {
				t.Fatal(err)
			}
			if typ != wantTyp || !bytes.Equal(got, want) {
				t.Fatalf("stored form differs from the driver's:\n got %x\nwant %x", got, want)
			}
			var back Entries
			if err := back.UnmarshalBSONValue(typ, got); err != nil || !reflect.DeepEqual(back, entries) {
				t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, back, entries)
			}
			// Compressed, as the embedded store keeps a large one.
			doc, _ := bson.Marshal(struct {
				Outbox Entries `bson:"outbox"`
			}{entries})
			packed, err := compressPacked(doc)
			if err != nil {
				t.Fatal(err)
			}
			var fromStore struct {
				Outbox Entries `bson:"outbox"`
			}
			if err := bson.Unmarshal(packed, &fromStore); err != nil || !reflect.DeepEqual(fromStore.Outbox, entries) {
				t.Fatalf("compressed round trip: %v %+v", err, fromStore.Outbox)
			}
		})
	}
}

// Layouts the hand-written decoder does not take are read by the driver's, as before: an
// integer of another width, a field of an unknown name, an older array form.
func TestEntriesDecodeOtherLayouts(t *testing.T) {
	box := func(entry bson.D) []byte {
		raw, err := bson.Marshal(bson.D{{Key: "e", Value: bson.A{entry}}})
		if err != nil {
			t.Fatal(err)
		}
		return bsoncore.AppendBinary(nil, packedSubtype, raw)
	}
	tests := []struct {
		name string
		typ  bson.Type
		data []byte
		want Entries
	}{
		{"created as int32", bson.TypeBinary, box(bson.D{{Key: "id", Value: "evt_1"}, {Key: "created", Value: int32(7)}}), Entries{{ID: "evt_1", Created: 7}}},
		{"unknown field", bson.TypeBinary, box(bson.D{{Key: "id", Value: "evt_1"}, {Key: "later", Value: 3.5}}), Entries{{ID: "evt_1"}}},
		{"a name in another case", bson.TypeBinary, box(bson.D{{Key: "id", Value: "evt_1"}, {Key: "CreAted", Value: int64(9)}}), Entries{{ID: "evt_1", Created: 9}}},
		{"null string", bson.TypeBinary, box(bson.D{{Key: "id", Value: "evt_1"}, {Key: "object", Value: nil}}), Entries{{ID: "evt_1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Entries
			if err := got.UnmarshalBSONValue(byte(tt.typ), tt.data); err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// Whatever the hand-written decoder accepts, the driver's decodes to the same entries.
func FuzzEntriesDecode(f *testing.F) {
	for _, entries := range entriesCases() {
		_, data, _ := entries.MarshalBSONValue()
		_, bin, _, _ := bsoncore.ReadBinary(data)
		f.Add(bin)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := decodeEntries(bytes.Clone(raw))
		if !ok {
			return
		}
		var want packedBox[outbox.Doc]
		if err := bson.Unmarshal(raw, &want); err != nil {
			t.Fatalf("the hand-written decoder took what the driver refuses (%v): %x", err, raw)
		}
		if len(got) == 0 && len(want.E) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want.E) {
			t.Fatalf("decoded differently:\n got %+v\nwant %+v", got, want.E)
		}
	})
}

// BenchmarkEntries compares the hand-written codec with the driver's on a payment request's
// retained outbox (four events of about a kilobyte each).
func BenchmarkEntries(b *testing.B) {
	obj := `{"id":"pr_0123456789abcdef","object":"payment_request","amount":1200,"currency":"eur",` +
		`"status":"succeeded","payment_agreement":"pa_0123456789abcdef","attempts":1,"metadata":{},` +
		`"attempt_log":[{"attempt":1,"payment_method":"pm_0123456789abcdef","succeeded":true}]}`
	obj = obj + strings.Repeat(" ", 900-len(obj))
	var entries Entries
	for i := range 4 {
		entries = append(entries, outbox.Doc{ID: "evt_0123456789abcde" + string(rune('0'+i)), Type: "payment_request.succeeded",
			Account: "acct_0123456789abcdef", APIVersion: "2024-06-01", Created: 1_790_000_000, RequestID: strPtr("req_0123456789"),
			Object: obj, Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	}
	_, data, _ := entries.MarshalBSONValue()
	b.Run("encode/driver", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = Packed[outbox.Doc](entries).MarshalBSONValue()
		}
	})
	b.Run("encode/hand", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = entries.MarshalBSONValue()
		}
	})
	b.Run("decode/driver", func(b *testing.B) {
		for b.Loop() {
			var p Packed[outbox.Doc]
			_ = p.UnmarshalBSONValue(byte(bson.TypeBinary), data)
		}
	})
	b.Run("decode/hand", func(b *testing.B) {
		for b.Loop() {
			var e Entries
			_ = e.UnmarshalBSONValue(byte(bson.TypeBinary), data)
		}
	})
}
