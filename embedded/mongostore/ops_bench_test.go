package mongostore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
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

// BenchmarkPackedArray measures what an array of subdocuments costs the embedded store against
// the same array packed into one binary value (docstore.Packed), in the shape of a stored
// webhook event with its twenty delivery targets (about 3 KB), over 3,000 such documents: the
// insert of a new one and the replace of one by _id.
func BenchmarkPackedArray(b *testing.B) {
	st := start(b, b.TempDir())
	c := connect(b, st.URI())
	obj := `{"id":"we_123","object":"webhook_endpoint","url":"https://127.0.0.1:9999/hook","description":"` + strings.Repeat("d", 60) + `","enabled_events":["*"],"status":"enabled","api_version":"2026-01-01","created":1790000000,"livemode":false,"metadata":{}}`
	obj = obj + strings.Repeat(" ", 1200-len(obj))
	targets := bson.A{}
	for i := 0; i < 20; i++ {
		t := bson.D{{Key: "delivery", Value: fmt.Sprintf("wd_%024d", i)}, {Key: "endpoint", Value: fmt.Sprintf("we_%024d", i)}, {Key: "status", Value: "succeeded"}}
		targets = append(targets, t)
	}
	packed, err := bson.Marshal(bson.D{{Key: "e", Value: targets}})
	if err != nil {
		b.Fatal(err)
	}
	event := func(id string, v int, pack bool) bson.D {
		d := bson.D{{Key: "_id", Value: id}, {Key: "_v", Value: v}, {Key: "id", Value: id}, {Key: "type", Value: "webhook_endpoint.updated"}, {Key: "account", Value: "acct_bench"},
			{Key: "api_version", Value: "2026-01-01"}, {Key: "created", Value: int64(1790000000 + v)}, {Key: "livemode", Value: false}, {Key: "request_id", Value: "req_abcdefabcdefabcdef"},
			{Key: "idempotency_key", Value: nil}, {Key: "object", Value: obj}, {Key: "previous", Value: `{"description":"old"}`}, {Key: "traceparent", Value: "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"},
			{Key: "family", Value: "webhook_endpoint"}, {Key: "created_at", Value: time.Unix(1790000000, 0)}}
		if pack {
			d = append(d, bson.E{Key: "targets", Value: bson.Binary{Subtype: 0x80, Data: packed}})
		} else {
			d = append(d, bson.E{Key: "targets", Value: targets})
		}
		return append(d, bson.E{Key: "pending_webhooks", Value: 0}, bson.E{Key: "delivery_success", Value: true}, bson.E{Key: "fanned_out", Value: v%2 == 0})
	}
	for _, pack := range []bool{false, true} {
		benchInsertReplace(b, c.Database("bench").Collection(fmt.Sprintf("events_packed_%v", pack)), fmt.Sprintf("packed=%v", pack),
			func(id string, v int) bson.D { return event(id, v, pack) })
	}
}

// benchInsertReplace seeds coll with 3,000 documents made by doc, then runs name/InsertOne (a
// new document each time) and name/ReplaceOne (a seeded one by _id, at a new version).
func benchInsertReplace(b *testing.B, coll *mongo.Collection, name string, doc func(id string, v int) bson.D) {
	ctx := context.Background()
	var seed []any
	for i := 0; i < 3000; i++ {
		seed = append(seed, doc(fmt.Sprintf("seed%05d", i), 0))
	}
	if _, err := coll.InsertMany(ctx, seed); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the store's _id write-path index, as in steady state (idindex.go)
	n := 0
	b.Run(name+"/InsertOne", func(b *testing.B) {
		for b.Loop() {
			n++
			if _, err := coll.InsertOne(ctx, doc(fmt.Sprintf("new%07d", n), 0)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(name+"/ReplaceOne", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			id := fmt.Sprintf("seed%05d", i%3000)
			if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc(id, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPackedCompressed measures a packed array stored as it is against the same array
// compressed with S2 (docstore.Packed from 1 KiB), in the shape of a payment request carrying
// eight retained outbox entries (each its event's payment request as JSON, about 4.5 KB in
// all), over 3,000 such documents: the insert of a new one and the replace of one by _id.
func BenchmarkPackedCompressed(b *testing.B) {
	st := start(b, b.TempDir())
	c := connect(b, st.URI())
	entries := bson.A{}
	for i := 0; i < 8; i++ {
		obj := fmt.Sprintf(`{"id":"preq_%024d","object":"payment_request","amount":%d,"currency":"eur","status":"succeeded",`+
			`"payment_agreement":"pa_%024d","attempts":1,"next_attempt_at":null,"payment_method":"pm_%024d","failure_code":null,`+
			`"description":"rent for unit 4b","metadata":{"lease":"lease_%08d"},"created":%d,"livemode":false,"latest_charge":"ch_%024d"}`,
			i, 125000, i, i, i, 1790000000+i, i)
		entries = append(entries, bson.D{{Key: "id", Value: fmt.Sprintf("evt_%024d", i)}, {Key: "type", Value: "payment_request.succeeded"},
			{Key: "account", Value: "acct_bench"}, {Key: "api_version", Value: "2026-01-01"}, {Key: "created", Value: int64(1790000000 + i)},
			{Key: "livemode", Value: false}, {Key: "request_id", Value: "req_abcdefabcdefabcdef"}, {Key: "idempotency_key", Value: nil},
			{Key: "object", Value: obj}, {Key: "previous", Value: `{"status":"processing"}`},
			{Key: "traceparent", Value: "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}})
	}
	box, err := bson.Marshal(bson.D{{Key: "e", Value: entries}})
	if err != nil {
		b.Fatal(err)
	}
	forms := map[bool]bson.Binary{false: {Subtype: 0x80, Data: box}, true: {Subtype: 0x81, Data: s2.Encode(nil, box)}}
	b.Logf("outbox: %d bytes packed, %d compressed", len(box), len(forms[true].Data))
	request := func(id string, v int, compressed bool) bson.D {
		return bson.D{{Key: "_id", Value: id}, {Key: "version", Value: int64(v)}, {Key: "account", Value: "acct_bench"}, {Key: "livemode", Value: false},
			{Key: "payment_agreement", Value: "pa_000000000000000000000001"}, {Key: "amount", Value: int64(125000)}, {Key: "currency", Value: "eur"},
			{Key: "status", Value: "succeeded"}, {Key: "attempts", Value: 1}, {Key: "created", Value: int64(1790000000)},
			{Key: "outbox", Value: forms[compressed]}, {Key: "outbox_since", Value: nil}}
	}
	for _, compressed := range []bool{false, true} {
		benchInsertReplace(b, c.Database("bench").Collection(fmt.Sprintf("requests_compressed_%v", compressed)), fmt.Sprintf("compressed=%v", compressed),
			func(id string, v int) bson.D { return request(id, v, compressed) })
	}
}
