package asynq_test

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/asynqx"

	asynqadapter "rentalplatform/webhooks-svc/internal/adapters/asynq"
	"rentalplatform/webhooks-svc/internal/tasks"
)

// The scheduler against a real asynq on Redis (REDIS_URL, else the embedded one): an attempt
// queued already keeps its task; one whose task asynq archived is queued again, or the
// overdue sweep could never repair that delivery.
func TestScheduler(t *testing.T) {
	opt, err := asynqx.RedisOpt(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = insp.Close() })
	rc := opt.MakeRedisClient().(redis.UniversalClient)
	t.Cleanup(func() { _ = rc.Close() })
	s := asynqadapter.NewScheduler(asynqx.NewProducer(client, nil, propagation.TraceContext{}), rc, time.Second)
	ctx := t.Context()
	id := tasks.Deliver{Delivery: "wd_test1", Attempt: 3}.ID()
	state := func() asynq.TaskState {
		t.Helper()
		info, err := insp.GetTaskInfo(tasks.QueueWebhooks, id)
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		return info.State
	}
	at := time.Now().Add(time.Hour)

	if err := s.Schedule(ctx, "wd_test1", 3, at); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != asynq.TaskStateScheduled {
		t.Fatalf("after Schedule: %v", got)
	}
	if err := insp.RunTask(tasks.QueueWebhooks, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(ctx, "wd_test1", 3, at); err != nil {
		t.Fatalf("Schedule of a queued attempt: %v", err)
	}
	if got := state(); got != asynq.TaskStatePending {
		t.Fatalf("a queued attempt was moved: %v; want it left pending", got)
	}

	if err := insp.ArchiveTask(tasks.QueueWebhooks, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(ctx, "wd_test1", 3, at); err != nil {
		t.Fatalf("Schedule over an archived task: %v", err)
	}
	if got := state(); got != asynq.TaskStateScheduled {
		t.Fatalf("after Schedule over the archived task: %v; want it scheduled again", got)
	}

	// Redis loses its data (a flush); the task is queued again by this process, whose asynq
	// client does not register the queue again: the next Schedule finds the task in the way
	// and must still see it (the queue is registered again), not fail with "queue not found".
	if err := rc.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(ctx, "wd_test1", 3, at); err != nil {
		t.Fatalf("Schedule after a flush: %v", err)
	}
	if err := s.Schedule(ctx, "wd_test1", 3, at); err != nil {
		t.Fatalf("Schedule of the attempt queued after a flush: %v", err)
	}
	if got := state(); got != asynq.TaskStateScheduled {
		t.Fatalf("after the flush: %v; want it scheduled", got)
	}
}
