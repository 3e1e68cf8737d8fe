package mongo_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/outbox"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/domain"
)

// The fast path publishes what a write stored, with its trace context, and the stored entries
// are then cleared once: by the fast path, whose entries are rebuilt from the events and the
// request context and must match the stored ones, or by the relay without a second publish.
func TestFastPathClearsWhatTheWriteStored(t *testing.T) {
	t.Parallel()
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	repo := mongo.NewRepository(testkit.MongoDatabase(t), prop, 0)
	if err := repo.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	opt, err := asynqx.RedisOpt(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	// The relay never runs by itself (and is swept below only once the fast path has
	// published): only the fast path may publish here.
	relay := outbox.NewRelay(outbox.NewPublisher(client, prop), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, 0, repo.OutboxStore())
	fast := mongo.FastPath{Relay: relay, Repo: repo}

	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(t.Context(), "request")
	defer span.End()

	f := newFixture(t, repo)
	e := f.endpoint(false, "fast")
	created := raise(t, f.gen, e, "webhook_endpoint.created")
	if err := repo.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	fast.Dispatch(ctx, e.ID(), []events.Event{created})
	u, err := repo.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error {
		raise(t, f.gen, e, "webhook_endpoint.updated")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fast.Dispatch(ctx, e.ID(), u.NewEvents())

	deadline := time.Now().Add(5 * time.Second)
	for _, ev := range []events.Event{created, u.NewEvents()[0]} {
		info, err := insp.GetTaskInfo(events.Queue, ev.ID)
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			info, err = insp.GetTaskInfo(events.Queue, ev.ID)
		}
		if err != nil {
			t.Fatalf("event %s not published: %v", ev.ID, err)
		}
		if info.Headers["traceparent"] == "" {
			t.Fatalf("event %s published without trace context", ev.ID)
		}
	}
	// On MongoDB the fast path clears what it published, which takes entries equal to the
	// stored ones. The embedded store leaves that to the relay (DefersClear), which must then
	// clear them without publishing them again.
	defers := repo.OutboxStore().DefersClear(ctx)
	for len(pendingIDs(t, repo, e.ID())) != 0 {
		if defers {
			if n := relay.Sweep(ctx); n != 0 {
				t.Fatalf("the relay published %d events the fast path had published", n)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("left in the outbox: %v (clears deferred to the relay: %v)", pendingIDs(t, repo, e.ID()), defers)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An endpoint written by many requests at once keeps a short outbox: each write drops what the
// fast path has published, instead of the clears queueing behind the writes (they used to time
// out there, and the outbox, and every write, grew without bound).
func TestBusyEndpointKeepsItsOutboxShort(t *testing.T) {
	t.Parallel()
	repo := mongo.NewRepository(testkit.MongoDatabase(t), nil, 0)
	opt, err := asynqx.RedisOpt(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	// The relay only sweeps when told to, at the end.
	relay := outbox.NewRelay(outbox.NewPublisher(client, propagation.TraceContext{}), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, 0, repo.OutboxStore())
	repo.CompactWith(relay.Published())
	fast := mongo.FastPath{Relay: relay, Repo: repo}
	ctx := t.Context()
	f := newFixture(t, repo)
	e := f.create(false, "busy")

	const writers, writes = 16, 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	longest := 0
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for i := 0; i < writes; i++ {
				u, err := repo.Update(ctx, e.ID(), f.account, false, func(e *domain.Endpoint) error {
					raise(t, f.gen, e, "webhook_endpoint.updated")
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				fast.Dispatch(ctx, e.ID(), u.NewEvents())
				n := len(pendingIDs(t, repo, e.ID()))
				mu.Lock()
				longest = max(longest, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if longest > 2*writers {
		t.Fatalf("the outbox reached %d events under %d concurrent writers", longest, writers)
	}
	// What the busy writes left is published already: the relay clears it without a
	// second publish.
	deadline := time.Now().Add(5 * time.Second)
	for len(pendingIDs(t, repo, e.ID())) != 0 {
		relay.Sweep(ctx)
		if time.Now().After(deadline) {
			t.Fatalf("left in the outbox: %v", pendingIDs(t, repo, e.ID()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("longest outbox under %d writers: %d events", writers, longest)
}
