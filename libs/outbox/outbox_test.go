package outbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/eventtask"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// memStore is an in-memory Store: the relay's side is tested here, against the contract; the
// stores themselves (libs/docstore) are tested on the real store.
type memStore struct {
	mu    sync.Mutex
	boxes map[string]*memBox
}

type memBox struct {
	docs  []Doc
	since time.Time
}

func newMemStore() *memStore { return &memStore{boxes: map[string]*memBox{}} }

func (s *memStore) put(id string, since time.Time, docs ...Doc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.boxes[id] = &memBox{docs: slices.Clone(docs), since: since}
}

func (s *memStore) Pending(_ context.Context, before time.Time, limit int) ([]Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Batch
	for _, id := range slices.Sorted(maps.Keys(s.boxes)) {
		if b := s.boxes[id]; !b.since.After(before) && len(out) < limit {
			out = append(out, Batch{AggregateID: id, Docs: slices.Clone(b.docs)})
		}
	}
	return out, nil
}

func (s *memStore) Clear(_ context.Context, id string, docs []Doc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.boxes[id]
	if !ok {
		return nil
	}
	b.docs = slices.DeleteFunc(b.docs, func(d Doc) bool {
		return slices.ContainsFunc(docs, func(c Doc) bool { return c.ID == d.ID })
	})
	if len(b.docs) == 0 {
		delete(s.boxes, id)
	}
	return nil
}

func (s *memStore) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.boxes {
		n += len(b.docs)
	}
	return n
}

var prop = propagation.TraceContext{}

func newDoc(t *testing.T, ctx context.Context, gen *ids.Generator, typ string) Doc {
	t.Helper()
	e, err := eventstest.New(gen, time.Now(), eventstest.Change{Type: typ, Account: "acct_a", Object: map[string]string{"id": "agg"},
		Caller: &identity.Identity{Account: "acct_a", RequestID: "req_1", IdempotencyKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	return ToDoc(ctx, prop, e)
}

func setup(t *testing.T) (*memStore, *asynq.Client, *asynq.Inspector) {
	t.Helper()
	opt, err := asynqx.RedisOpt(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); insp.Close() })
	return newMemStore(), client, insp
}

func newPublisher(client asynqx.Enqueuer) *Publisher {
	return NewPublisher(asynqx.NewProducer(client, nil, prop))
}

func newRelay(client asynqx.Enqueuer, grace time.Duration, store Store) *Relay {
	r := NewRelay(newPublisher(client), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, grace)
	r.Add(store)
	return r
}

// queuedEvent is an event waiting in the queue and the task that carries it.
type queuedEvent struct {
	task  *asynq.TaskInfo
	event events.Event
}

// queued returns the events waiting in the queue by id, single or in batches.
func queued(t *testing.T, insp *asynq.Inspector) map[string]queuedEvent {
	t.Helper()
	out := map[string]queuedEvent{}
	tasks, err := insp.ListPendingTasks(eventtask.Queue)
	if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		t.Fatal(err)
	}
	for _, ti := range tasks {
		evs, err := eventtask.FromTask(ti.Type, ti.Payload)
		if err != nil {
			t.Fatalf("task %s %s: %v", ti.Type, ti.Payload, err)
		}
		if ti.Type == eventtask.TaskType && evs[0].ID != ti.ID {
			t.Fatalf("task %s carries event %s", ti.ID, evs[0].ID)
		}
		for _, e := range evs {
			out[e.ID] = queuedEvent{task: ti, event: e}
		}
	}
	return out
}

func TestRelayPublishesWhatTheFastPathMissed(t *testing.T) {
	store, client, insp := setup(t)
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "request")
	gen := ids.NewGenerator(nil)
	old, young := time.Now().Add(-10*time.Second), time.Now()
	oldDocs := []Doc{newDoc(t, ctx, gen, "a.b"), newDoc(t, ctx, gen, "a.c")}
	youngDoc := newDoc(t, ctx, gen, "a.d")
	span.End()
	store.put("old", old, oldDocs...)
	store.put("young", young, youngDoc)
	relay := newRelay(client, 5*time.Second, store)
	if n := relay.Sweep(context.Background()); n != 2 {
		t.Fatalf("published %d, want the 2 older than the grace period", n)
	}
	q := queued(t, insp)
	for _, d := range oldDocs {
		qe, ok := q[d.ID]
		if !ok {
			t.Fatalf("event %s not queued (queue: %v)", d.ID, q)
		}
		ti, e := qe.task, qe.event
		if *e.Request.IdempotencyKey != "k" {
			t.Fatalf("event %+v lost its request", e)
		}
		// The two events of one aggregate, raised under one trace, travel as one task.
		if ti.Type != eventtask.BatchTaskType || ti.ID != q[oldDocs[0].ID].task.ID {
			t.Fatalf("event %s queued as %s %s, want one batch task for both", d.ID, ti.Type, ti.ID)
		}
		if ti.Headers["traceparent"] == "" || !slices.Contains([]string{span.SpanContext().TraceID().String()}, traceID(ti.Headers["traceparent"])) {
			t.Fatalf("task headers %v do not continue the request's trace", ti.Headers)
		}
	}
	if _, ok := q[youngDoc.ID]; ok {
		t.Fatal("the relay took an event still within the fast path's grace period")
	}
	// Publishing again (a crash between publish and clear) is harmless.
	if err := newPublisher(client).Publish(context.Background(), oldDocs...); err != nil {
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
	store, client, insp := setup(t)
	ctx := context.Background()
	d := newDoc(t, ctx, ids.NewGenerator(nil), "a.b")
	store.put("agg", time.Now(), d)
	down := asynq.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	defer down.Close()
	failing := newRelay(down, 0, store)
	cleared := false
	failing.Dispatch(ctx, []Doc{d}, func(context.Context) error { cleared = true; return nil })
	failing.Wait()
	if cleared || store.pending() != 1 {
		t.Fatalf("the failed fast path cleared (%v) or lost the event (%d pending)", cleared, store.pending())
	}
	if n := newRelay(client, 0, store).Sweep(ctx); n != 1 {
		t.Fatalf("relay published %d after recovery", n)
	}
	if _, ok := queued(t, insp)[d.ID]; !ok {
		t.Fatal("event not queued after recovery")
	}
	if store.pending() != 0 {
		t.Fatal("the relay did not clear what it published")
	}
}

// A store that leaves the fast path's clears to the relay (no clear function) gets them from
// the sweep, which does not publish them a second time.
func TestClearLeftToTheRelay(t *testing.T) {
	store, client, insp := setup(t)
	ctx := context.Background()
	d := newDoc(t, ctx, ids.NewGenerator(nil), "a.b")
	store.put("deferred", time.Now(), d)
	relay := newRelay(client, 0, store)
	relay.Dispatch(ctx, []Doc{d}, nil)
	relay.Wait()
	if _, ok := queued(t, insp)[d.ID]; !ok {
		t.Fatal("the fast path did not publish")
	}
	if store.pending() != 1 {
		t.Fatal("the entry was cleared though the store left it to the relay")
	}
	if !relay.Published().Has(d.ID) {
		t.Fatal("the relay does not remember what the fast path published")
	}
	if n := relay.Sweep(ctx); n != 0 {
		t.Fatalf("the relay published %d events the fast path had published", n)
	}
	if store.pending() != 0 {
		t.Fatal("left after the sweep")
	}
}

// One pass takes more than one page of aggregates.
func TestSweepReadsPageAfterPage(t *testing.T) {
	store, client, insp := setup(t)
	ctx := context.Background()
	gen := ids.NewGenerator(nil)
	old := time.Now().Add(-time.Minute)
	const n = 2*sweepPageSize + 10
	for i := 0; i < n; i++ {
		store.put(gen.New("agg"), old, newDoc(t, ctx, gen, "a.b"))
	}
	relay := newRelay(client, time.Second, store)
	if got := relay.Sweep(ctx); got != n {
		t.Fatalf("one sweep published %d, want %d", got, n)
	}
	if q, err := insp.ListPendingTasks(eventtask.Queue, asynq.PageSize(1000)); err != nil || len(q) != n {
		t.Fatalf("%d events queued (%v), want %d", len(q), err, n)
	}
}

// A destination (a verification session's webhook_url and its signing secret) survives the
// stored form and the task payload, so webhooks-svc routes the event where its object says;
// an event without one has none.
func TestDestinationRoundTrip(t *testing.T) {
	gen := ids.NewGenerator(nil)
	dest := &events.Destination{URL: "https://hooks.example.com/vs", Secret: "whsec_c2VjcmV0"}
	for _, want := range []*events.Destination{dest, nil} {
		e, err := eventstest.New(gen, time.Now(), eventstest.Change{Type: "verification_session.created", Account: "acct_a",
			Object: map[string]string{"id": "vs_1"}, Destination: want})
		if err != nil {
			t.Fatal(err)
		}
		payload, err := eventtask.Marshal(ToDoc(context.Background(), prop, e).Event())
		if err != nil {
			t.Fatal(err)
		}
		got, err := eventtask.Unmarshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		if (got.Destination == nil) != (want == nil) || (want != nil && *got.Destination != *want) {
			t.Errorf("destination %+v came back as %+v", want, got.Destination)
		}
	}
}

// recorder is an Enqueuer that keeps the tasks enqueued.
type recorder struct {
	mu    sync.Mutex
	tasks []*asynq.Task
	ids   []string
}

func (r *recorder) EnqueueContext(_ context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := ""
	for _, o := range opts {
		if o.Type() == asynq.TaskIDOpt {
			id, _ = o.Value().(string)
		}
	}
	if slices.Contains(r.ids, id) {
		return nil, asynq.ErrTaskIDConflict
	}
	r.tasks, r.ids = append(r.tasks, task), append(r.ids, id)
	return &asynq.TaskInfo{ID: id}, nil
}

// Events raised under one trace context go as one task (eventtask.MaxBatch at most), an event
// alone as a single-event task under its own id, and a batch published again is one task.
func TestPublishBatchesByTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	gen := ids.NewGenerator(nil)
	ctxA, spanA := tp.Tracer("t").Start(context.Background(), "a")
	ctxB, spanB := tp.Tracer("t").Start(context.Background(), "b")
	defer spanA.End()
	defer spanB.End()
	var docs []Doc
	for range eventtask.MaxBatch + 2 {
		docs = append(docs, newDoc(t, ctxA, gen, "a.b"))
	}
	docs = append(docs, newDoc(t, ctxB, gen, "a.c"))
	rec := &recorder{}
	spans := tracetest.NewSpanRecorder()
	pub := NewPublisher(asynqx.NewProducer(rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)), prop))
	if err := pub.Publish(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	if len(rec.tasks) != 3 {
		t.Fatalf("%d tasks, want 3 (a full batch, the trace's last two, the other trace's one)", len(rec.tasks))
	}
	want := []struct {
		typ string
		n   int
	}{{eventtask.BatchTaskType, eventtask.MaxBatch}, {eventtask.BatchTaskType, 2}, {eventtask.TaskType, 1}}
	var seen []string
	for i, task := range rec.tasks {
		if task.Type() != want[i].typ {
			t.Fatalf("task %d is %s, want %s", i, task.Type(), want[i].typ)
		}
		evs, err := eventtask.FromTask(task.Type(), task.Payload())
		if err != nil {
			t.Fatal(err)
		}
		if task.Type() == eventtask.TaskType && rec.ids[i] != evs[0].ID {
			t.Errorf("single-event task id %s, want the event's %s", rec.ids[i], evs[0].ID)
		}
		if len(evs) != want[i].n {
			t.Fatalf("task %d carries %d events, want %d", i, len(evs), want[i].n)
		}
		for _, e := range evs {
			seen = append(seen, e.ID)
		}
	}
	for i, d := range docs {
		if seen[i] != d.ID {
			t.Fatalf("event %d is %s, want %s (in order)", i, seen[i], d.ID)
		}
	}
	// A batch's publish span names every event it carries; a single event's has its id as the
	// message id already.
	var batchSpans [][]string
	for _, sp := range spans.Ended() {
		attrs := attribute.NewSet(sp.Attributes()...)
		ids, hasIDs := attrs.Value(eventtask.AttrEventIDs)
		count, _ := attrs.Value(eventtask.AttrBatchCount)
		typ, _ := attrs.Value("asynq.task.type")
		if typ.AsString() != eventtask.BatchTaskType {
			if hasIDs {
				t.Errorf("the single event's span has %s", eventtask.AttrEventIDs)
			}
			continue
		}
		if int(count.AsInt64()) != len(ids.AsStringSlice()) {
			t.Errorf("batch span: count %d, ids %v", count.AsInt64(), ids.AsStringSlice())
		}
		batchSpans = append(batchSpans, ids.AsStringSlice())
	}
	if len(batchSpans) != 2 || !slices.Equal(slices.Concat(batchSpans...), seen[:len(docs)-1]) {
		t.Errorf("batch spans name %v, want the batches' events %v", batchSpans, seen[:len(docs)-1])
	}
	if err := pub.Publish(context.Background(), docs...); err != nil || len(rec.tasks) != 3 {
		t.Fatalf("publishing the same events again: %v, %d tasks", err, len(rec.tasks))
	}
}

// retaining is a store that also retains published events (RecentStore).
type retaining struct {
	*memStore
	recent []Batch
}

func (s *retaining) Recent(_ context.Context, since time.Time) ([]Batch, error) {
	var out []Batch
	for _, b := range s.recent {
		for _, d := range b.Docs {
			if d.Created >= since.Unix() {
				out = append(out, b)
				break
			}
		}
	}
	return out, nil
}

// fakeEpoch is a marker that is missing until marked, or unreachable.
type fakeEpoch struct {
	mu     sync.Mutex
	set    bool
	down   bool
	marked int
}

func (e *fakeEpoch) Lost(context.Context) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return false, errors.New("redis: connection refused")
	}
	return !e.set, nil
}

func (e *fakeEpoch) Mark(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.set, e.marked = true, e.marked+1
	return nil
}

func TestRelayPublishesTheRetainedEventsAgainWhenTheQueueLostThem(t *testing.T) {
	mem, client, insp := setup(t)
	ctx := context.Background()
	gen := ids.NewGenerator(nil)
	old, recentA, recentB := newDoc(t, ctx, gen, "a.old"), newDoc(t, ctx, gen, "a.b"), newDoc(t, ctx, gen, "a.c")
	old.Created = time.Now().Add(-11 * time.Minute).Unix()
	store := &retaining{memStore: mem, recent: []Batch{{AggregateID: "agg", Docs: []Doc{old, recentA, recentB}}}}
	epoch := &fakeEpoch{down: true}
	relay := newRelay(client, 0, store)
	relay.Retain(10*time.Minute, epoch)

	if n := relay.Sweep(ctx); n != 0 || len(queued(t, insp)) != 0 || epoch.marked != 0 {
		t.Fatalf("with the marker unreadable: %d published, %d queued, marked %d times; want nothing", n, len(queued(t, insp)), epoch.marked)
	}
	epoch.down = false
	relay.Sweep(ctx)
	got := queued(t, insp)
	if len(got) != 2 || got[recentA.ID].event.ID == "" || got[recentB.ID].event.ID == "" {
		t.Fatalf("queued after the loss: %v; want %s and %s (not %s, raised before the window)", slices.Collect(maps.Keys(got)), recentA.ID, recentB.ID, old.ID)
	}
	if epoch.marked != 1 {
		t.Fatalf("marker set %d times; want once, after publishing", epoch.marked)
	}
	if _, err := insp.DeleteAllPendingTasks(eventtask.Queue); err != nil {
		t.Fatal(err)
	}
	relay.Sweep(ctx)
	if n := len(queued(t, insp)); n != 0 {
		t.Fatalf("%d events published again with the marker set; want none", n)
	}
}

// A service adds its stores as it opens them, which may be after the relay's first pass: a
// store added after the loss was found (and the marker set) is recovered on the next pass.
func TestRelayRecoversAStoreAddedAfterItFoundTheLoss(t *testing.T) {
	mem, client, insp := setup(t)
	ctx := context.Background()
	gen := ids.NewGenerator(nil)
	epoch := &fakeEpoch{}
	relay := newRelay(client, 0, mem) // a store that retains nothing
	relay.Retain(10*time.Minute, epoch)
	relay.Sweep(ctx)
	if epoch.marked != 1 {
		t.Fatalf("marker set %d times on the first pass; want once", epoch.marked)
	}

	late := newDoc(t, ctx, gen, "a.late")
	relay.Add(&retaining{memStore: &memStore{}, recent: []Batch{{AggregateID: "agg", Docs: []Doc{late}}}})
	relay.Sweep(ctx)
	if got := queued(t, insp); len(got) != 1 || got[late.ID].event.ID == "" {
		t.Fatalf("queued after the late store was added: %v; want %s", slices.Collect(maps.Keys(got)), late.ID)
	}
	if _, err := insp.DeleteAllPendingTasks(eventtask.Queue); err != nil {
		t.Fatal(err)
	}
	relay.Sweep(ctx)
	if n := len(queued(t, insp)); n != 0 || epoch.marked != 1 {
		t.Fatalf("a pass more: %d events published again, marker set %d times; want none and once", n, epoch.marked)
	}
}

// A process that finds the marker missing before it publishes anything (Claim) sets it at
// once: its stores' retained events are published again, but for those it published itself
// since, which are in this Redis. A loss found later publishes everything retained again.
func TestRelayClaimingANewQueueSkipsWhatItPublishedItself(t *testing.T) {
	mem, client, insp := setup(t)
	ctx := context.Background()
	gen := ids.NewGenerator(nil)
	earlier, own := newDoc(t, ctx, gen, "a.earlier"), newDoc(t, ctx, gen, "a.own")
	epoch := &fakeEpoch{}
	relay := newRelay(client, 0, mem)
	relay.Retain(10*time.Minute, epoch)
	if err := relay.Claim(ctx); err != nil || epoch.marked != 1 {
		t.Fatalf("claim of a queue without its marker: %v, marker set %d times; want set once", err, epoch.marked)
	}
	if err := relay.publish(ctx, []Doc{own}); err != nil { // the fast path of this process
		t.Fatal(err)
	}
	if _, err := insp.DeleteAllPendingTasks(eventtask.Queue); err != nil {
		t.Fatal(err)
	}
	relay.Add(&retaining{memStore: &memStore{}, recent: []Batch{{AggregateID: "agg", Docs: []Doc{earlier, own}}}})
	relay.Sweep(ctx)
	if got := queued(t, insp); len(got) != 1 || got[earlier.ID].event.ID == "" {
		t.Fatalf("published again after the claim: %v; want %s alone (not %s, published by this process into this queue)", slices.Collect(maps.Keys(got)), earlier.ID, own.ID)
	}
	if _, err := insp.DeleteAllPendingTasks(eventtask.Queue); err != nil {
		t.Fatal(err)
	}

	epoch.set = false // lost again while the process runs: its own events are lost too
	relay.Sweep(ctx)
	if got := queued(t, insp); len(got) != 2 {
		t.Fatalf("published again after a later loss: %v; want %s and %s", slices.Collect(maps.Keys(got)), earlier.ID, own.ID)
	}

	epoch.down, epoch.set = true, false
	if err := relay.Claim(ctx); err == nil {
		t.Fatal("claim with the marker unreadable: no error")
	}
}

// OUTBOX_RETENTION=0 keeps nothing, so the relay never asks the marker: no Redis round trip
// per pass, nothing published again.
func TestRelayWithoutRetentionNeverAsksTheMarker(t *testing.T) {
	_, client, insp := setup(t)
	ctx := context.Background()
	gen := ids.NewGenerator(nil)
	recent := newDoc(t, ctx, gen, "a.recent")
	epoch := &fakeEpoch{down: true} // any question would fail
	relay := newRelay(client, 0, &retaining{memStore: &memStore{}, recent: []Batch{{AggregateID: "agg", Docs: []Doc{recent}}}})
	relay.Retain(0, epoch)
	if err := relay.Claim(ctx); err != nil {
		t.Fatalf("claim without retention: %v; want no question asked", err)
	}
	epoch.down = false
	relay.Sweep(ctx)
	if n := len(queued(t, insp)); n != 0 || epoch.marked != 0 {
		t.Fatalf("without retention: %d published again, marker set %d times; want none", n, epoch.marked)
	}
}
