package outbox

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/mongox"
)

type aggregate struct {
	ID          string     `bson:"_id"`
	State       string     `bson:"state"`
	Deleted     bool       `bson:"deleted,omitempty"`
	Outbox      []Doc      `bson:"outbox,omitempty"`
	OutboxSince *time.Time `bson:"outbox_since,omitempty"`
}

var prop = propagation.TraceContext{}

func newDoc(t *testing.T, ctx context.Context, gen *ids.Generator, typ string) Doc {
	t.Helper()
	e, err := events.New(gen, time.Now(), events.Change{Type: typ, Account: "acct_a", Object: map[string]string{"id": "agg"},
		Caller: &identity.Identity{Account: "acct_a", RequestID: "req_1", IdempotencyKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	return ToDoc(ctx, prop, e)
}

func setup(t *testing.T) (*mongo.Collection, MongoStore, *asynq.Client, *asynq.Inspector) {
	t.Helper()
	coll := testkit.MongoDatabase(t).Collection("aggregates")
	store := MongoStore{Coll: coll, Tombstone: "deleted", Server: mongox.NewServer(coll.Database())}
	if err := store.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	opt, err := asynqx.RedisOpt(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); insp.Close() })
	return coll, store, client, insp
}

func queued(t *testing.T, insp *asynq.Inspector) map[string]*asynq.TaskInfo {
	t.Helper()
	out := map[string]*asynq.TaskInfo{}
	tasks, err := insp.ListPendingTasks(events.Queue)
	if err != nil && err.Error() != "queue not found" {
		t.Fatal(err)
	}
	for _, ti := range tasks {
		out[ti.ID] = ti
	}
	return out
}

func TestClearKeepsEventsAppendedMeanwhile(t *testing.T) {
	coll, store, _, _ := setup(t)
	ctx := context.Background()
	gen := ids.NewGenerator(nil)
	d1, d2 := newDoc(t, ctx, gen, "a.b"), newDoc(t, ctx, gen, "a.c")
	long := time.Now().Add(-time.Minute)
	if _, err := coll.InsertOne(ctx, aggregate{ID: "agg1", Outbox: []Doc{d1, d2}, OutboxSince: &long}); err != nil {
		t.Fatal(err)
	}
	if err := store.Clear(ctx, "agg1", []Doc{d1}); err != nil {
		t.Fatal(err)
	}
	var got aggregate
	_ = coll.FindOne(ctx, bson.D{{Key: "_id", Value: "agg1"}}).Decode(&got)
	if len(got.Outbox) != 1 || got.Outbox[0].ID != d2.ID || got.OutboxSince == nil {
		t.Fatalf("after clearing one of two: %+v", got)
	}
	if err := store.Clear(ctx, "agg1", []Doc{d2}); err != nil {
		t.Fatal(err)
	}
	got = aggregate{}
	_ = coll.FindOne(ctx, bson.D{{Key: "_id", Value: "agg1"}}).Decode(&got)
	if len(got.Outbox) != 0 || got.OutboxSince != nil {
		t.Fatalf("after clearing all: %+v", got)
	}
	if b, _ := store.Pending(ctx, time.Now(), 10); len(b) != 0 {
		t.Fatalf("still pending: %+v", b)
	}
}

func TestTombstoneRemovedWhenItsEventsAreOut(t *testing.T) {
	coll, store, _, _ := setup(t)
	ctx := context.Background()
	d := newDoc(t, ctx, ids.NewGenerator(nil), "a.deleted")
	now := time.Now()
	if _, err := coll.InsertOne(ctx, aggregate{ID: "gone", Deleted: true, Outbox: []Doc{d}, OutboxSince: &now}); err != nil {
		t.Fatal(err)
	}
	if err := store.Clear(ctx, "gone", []Doc{d}); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: "gone"}}); n != 0 {
		t.Fatal("tombstone not removed")
	}
}

func TestRelayPublishesWhatTheFastPathMissed(t *testing.T) {
	coll, store, client, insp := setup(t)
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "request")
	gen := ids.NewGenerator(nil)
	old, young := time.Now().Add(-10*time.Second), time.Now()
	oldDocs := []Doc{newDoc(t, ctx, gen, "a.b"), newDoc(t, ctx, gen, "a.c")}
	youngDoc := newDoc(t, ctx, gen, "a.d")
	span.End()
	for _, a := range []aggregate{{ID: "old", Outbox: oldDocs, OutboxSince: &old}, {ID: "young", Outbox: []Doc{youngDoc}, OutboxSince: &young}} {
		if _, err := coll.InsertOne(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	relay := NewRelay(NewPublisher(client, prop), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, 5*time.Second, store)
	if n := relay.Sweep(context.Background()); n != 2 {
		t.Fatalf("published %d, want the 2 older than the grace period", n)
	}
	q := queued(t, insp)
	for _, d := range oldDocs {
		ti, ok := q[d.ID]
		if !ok {
			t.Fatalf("event %s not queued (queue: %v)", d.ID, q)
		}
		e, err := events.Unmarshal(ti.Payload)
		if err != nil || e.ID != d.ID || *e.Request.IdempotencyKey != "k" {
			t.Fatalf("payload %s: %v", ti.Payload, err)
		}
		if ti.Headers["traceparent"] == "" || !slices.Contains([]string{span.SpanContext().TraceID().String()}, traceID(ti.Headers["traceparent"])) {
			t.Fatalf("task headers %v do not continue the request's trace", ti.Headers)
		}
	}
	if _, ok := q[youngDoc.ID]; ok {
		t.Fatal("the relay took an event still within the fast path's grace period")
	}
	// Publishing again (a crash between publish and clear) is harmless.
	if err := NewPublisher(client, prop).Publish(context.Background(), oldDocs...); err != nil {
		t.Fatalf("republish: %v", err)
	}
	if n := relay.Sweep(context.Background()); n != 0 {
		t.Fatalf("second sweep published %d", n)
	}
}

func traceID(traceparent string) string {
	if len(traceparent) < 35 {
		return ""
	}
	return traceparent[3:35]
}

func TestDispatchWithRedisDownLeavesEventsForTheRelay(t *testing.T) {
	coll, store, client, insp := setup(t)
	ctx := context.Background()
	d := newDoc(t, ctx, ids.NewGenerator(nil), "a.b")
	now := time.Now()
	if _, err := coll.InsertOne(ctx, aggregate{ID: "agg", Outbox: []Doc{d}, OutboxSince: &now}); err != nil {
		t.Fatal(err)
	}
	down := asynq.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	defer down.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	failing := NewRelay(NewPublisher(down, prop), log, time.Hour, 0, store)
	failing.Dispatch(ctx, store, "agg", []Doc{d})
	failing.inflight.Wait()
	if b, _ := store.Pending(ctx, time.Now(), 10); len(b) != 1 {
		t.Fatalf("the failed fast path lost the event: pending %+v", b)
	}
	if n := NewRelay(NewPublisher(client, prop), log, time.Hour, 0, store).Sweep(ctx); n != 1 {
		t.Fatalf("relay published %d after recovery", n)
	}
	if _, ok := queued(t, insp)[d.ID]; !ok {
		t.Fatal("event not queued after recovery")
	}
}

func TestAppend(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	out, since := Append(nil, nil, t0, Doc{ID: "a"})
	if len(out) != 1 || !since.Equal(t0) {
		t.Fatalf("%v %v", out, since)
	}
	out, since = Append(out, since, t1, Doc{ID: "b"})
	if len(out) != 2 || !since.Equal(t0) {
		t.Fatalf("appending keeps the oldest wait: %v %v", out, since)
	}
	out2, since2 := Append(out, since, t1)
	if len(out2) != 2 || since2 != since {
		t.Fatal("appending nothing changed something")
	}
}

// Where the store defers clears (the embedded one), the fast path publishes and leaves the
// entries; the relay clears them without publishing them again. On MongoDB the fast path
// clears them itself.
func TestDeferredClearIsTheRelays(t *testing.T) {
	coll, store, client, insp := setup(t)
	ctx := context.Background()
	d := newDoc(t, ctx, ids.NewGenerator(nil), "a.b")
	now := time.Now()
	if _, err := coll.InsertOne(ctx, aggregate{ID: "deferred", Outbox: []Doc{d}, OutboxSince: &now}); err != nil {
		t.Fatal(err)
	}
	relay := NewRelay(NewPublisher(client, prop), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, 0, store)
	relay.Dispatch(ctx, store, "deferred", []Doc{d})
	relay.inflight.Wait()
	if _, ok := queued(t, insp)[d.ID]; !ok {
		t.Fatal("the fast path did not publish")
	}
	pending, err := store.Pending(ctx, time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if defers := store.DefersClear(ctx); defers != (len(pending) == 1) {
		t.Fatalf("store defers clears: %v; left in the outbox: %+v", defers, pending)
	}
	if n := relay.Sweep(ctx); n != 0 {
		t.Fatalf("the relay published %d events the fast path had published", n)
	}
	if pending, _ := store.Pending(ctx, time.Now(), 10); len(pending) != 0 {
		t.Fatalf("left after the sweep: %+v", pending)
	}
}

// One pass takes more than one page of aggregates.
func TestSweepReadsPageAfterPage(t *testing.T) {
	coll, store, client, insp := setup(t)
	ctx := context.Background()
	gen := ids.NewGenerator(nil)
	old := time.Now().Add(-time.Minute)
	const n = 2*sweepPageSize + 10
	var aggs []any
	for i := 0; i < n; i++ {
		aggs = append(aggs, aggregate{ID: gen.New("agg"), Outbox: []Doc{newDoc(t, ctx, gen, "a.b")}, OutboxSince: &old})
	}
	if _, err := coll.InsertMany(ctx, aggs); err != nil {
		t.Fatal(err)
	}
	relay := NewRelay(NewPublisher(client, prop), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, time.Second, store)
	if got := relay.Sweep(ctx); got != n {
		t.Fatalf("one sweep published %d, want %d", got, n)
	}
	if q, err := insp.ListPendingTasks(events.Queue, asynq.PageSize(1000)); err != nil || len(q) != n {
		t.Fatalf("%d events queued (%v), want %d", len(q), err, n)
	}
}
