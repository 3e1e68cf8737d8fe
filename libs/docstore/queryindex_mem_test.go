package docstore

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// What the query index holds per document, in heap bytes: a webhook event's list fields
// (go test -run XXX -bench QueryIndexMemory ./docstore/).
func BenchmarkQueryIndexMemory(b *testing.B) {
	const docs = 100_000
	raws := make([]bson.Raw, docs)
	for i := range raws {
		raws[i], _ = bson.Marshal(bson.D{
			{Key: "_id", Value: fmt.Sprintf("evt_1Q%022d", i)}, {Key: "version", Value: int64(1)},
			{Key: "account", Value: fmt.Sprintf("acct_%d", i%3)}, {Key: "livemode", Value: false},
			{Key: "type", Value: "payment_request.succeeded"}, {Key: "family", Value: "payment_request"},
			{Key: "delivery_success", Value: true}, {Key: "created", Value: time.Now().Unix()},
			{Key: "object", Value: string(make([]byte, 1500))},
		})
	}
	for b.Loop() {
		x := newQueryIndex()
		x.declare("account", "livemode", "type", "family", "delivery_success", "created")
		x.built = true
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, raw := range raws {
			x.put(raw)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/docs, "heap-B/doc")
		runtime.KeepAlive(x)
	}
}
