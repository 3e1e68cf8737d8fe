package asynq_test

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/asynqx"

	asynqadapter "rentalplatform/payments-svc/internal/adapters/asynq"
	"rentalplatform/payments-svc/internal/tasks"
)

// The scheduler against a real asynq on Redis (REDIS_URL, else the embedded one): what
// Schedule reports decides what the reconciler counts, so each answer is checked against the
// task asynq holds.
func TestScheduler(t *testing.T) {
	url := testkit.Redis(t)
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		t.Fatal(err)
	}
	rc := opt.MakeRedisClient().(redis.UniversalClient)
	client := asynq.NewClientFromRedisClient(rc)
	t.Cleanup(func() { _ = rc.Close() })
	s := asynqadapter.NewScheduler(asynqx.NewProducer(client, nil, propagation.TraceContext{}), rc, time.Minute)
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = insp.Close() })
	ctx := t.Context()
	const req = "preq_test1"
	id := tasks.Attempt{Request: req, N: 2}.ID()
	state := func() asynq.TaskState {
		t.Helper()
		info, err := insp.GetTaskInfo(tasks.QueuePayments, id)
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		return info.State
	}
	schedule := func(want bool) {
		t.Helper()
		queued, err := s.Schedule(ctx, req, 2, time.Now().Add(time.Hour))
		if err != nil || queued != want {
			t.Fatalf("Schedule = %v, %v; want %v", queued, err, want)
		}
	}

	if lost, err := s.Lost(ctx); err != nil || !lost {
		t.Fatalf("Lost on an empty Redis = %v, %v; want true", lost, err)
	}
	if lost, err := s.Lost(ctx); err != nil || lost {
		t.Fatalf("Lost the second time = %v, %v; want false", lost, err)
	}

	schedule(true)
	if got := state(); got != asynq.TaskStateScheduled {
		t.Fatalf("after Schedule: %v", got)
	}
	schedule(false) // queued already: kept, not counted

	// Archived (its retries ran out): it would block the id forever, so it is replaced.
	if err := insp.ArchiveTask(tasks.QueuePayments, id); err != nil {
		t.Fatal(err)
	}
	schedule(true)
	if got := state(); got != asynq.TaskStateScheduled {
		t.Fatalf("after replacing the archived task: %v", got)
	}

	if err := s.RunNow(ctx, req, 2); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != asynq.TaskStatePending {
		t.Fatalf("after RunNow: %v", got)
	}
	if err := s.RunNow(ctx, req, 2); err != nil {
		t.Fatalf("RunNow of a pending task: %v", err)
	}
	schedule(false) // pending: it runs

	if err := s.Unschedule(ctx, req, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := insp.GetTaskInfo(tasks.QueuePayments, id); err == nil {
		t.Fatal("the task is still there after Unschedule")
	}
	if err := s.Unschedule(ctx, req, 2); err != nil {
		t.Fatalf("Unschedule of a missing task: %v", err)
	}
	if err := s.RunNow(ctx, req, 2); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != asynq.TaskStatePending {
		t.Fatalf("RunNow of a missing task: %v; want it queued", got)
	}

	flusher := redis.NewClient(mustParse(t, url))
	t.Cleanup(func() { _ = flusher.Close() })
	if err := flusher.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if lost, err := s.Lost(ctx); err != nil || !lost {
		t.Fatalf("Lost after a flush = %v, %v; want true", lost, err)
	}
}

func mustParse(t *testing.T, url string) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
