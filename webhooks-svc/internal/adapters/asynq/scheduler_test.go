package asynq_test

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"
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
	s := asynqadapter.NewScheduler(asynqx.NewProducer(client, nil, propagation.TraceContext{}), insp, time.Second)
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
}
