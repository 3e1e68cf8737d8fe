// Package asynq schedules delivery attempts as asynq tasks on the "webhooks" queue.
package asynq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"rentalplatform/libs/asynqx"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/tasks"
)

// Scheduler implements app.Scheduler.
type Scheduler struct {
	producer  *asynqx.Producer
	inspector *asynq.Inspector
	redis     redis.UniversalClient
	// timeout bounds one run of the task: the attempt's own timeout plus the bookkeeping.
	timeout time.Duration
}

var _ app.Scheduler = (*Scheduler)(nil)

// NewScheduler returns a scheduler enqueuing through producer and inspecting the tasks it
// finds in the way (an archived one is replaced) on rc, the queue's pool; attemptTimeout is the HTTP timeout of one attempt.
func NewScheduler(producer *asynqx.Producer, rc redis.UniversalClient, attemptTimeout time.Duration) *Scheduler {
	return &Scheduler{producer: producer, inspector: asynq.NewInspectorFromRedisClient(rc), redis: rc, timeout: attemptTimeout + 30*time.Second}
}

// maxInfraRetries is how often asynq reruns an attempt task whose bookkeeping failed (the store
// was down); delivery failures themselves are never asynq retries.
const maxInfraRetries = 25

// Schedule implements app.Scheduler. The task id is "<delivery>:<attempt>": an attempt that is
// already queued (or running, or waiting for an asynq retry) is not queued again; one whose
// task asynq archived (its bookkeeping kept failing) is queued again in its place, so the
// overdue sweep can still repair it (asynqx.EnqueueReplacingDead).
func (s *Scheduler) Schedule(ctx context.Context, delivery string, attempt int, at time.Time) error {
	p := tasks.Deliver{Delivery: delivery, Attempt: attempt}
	opts := []asynq.Option{
		asynq.Queue(tasks.QueueWebhooks), asynq.TaskID(p.ID()),
		asynq.MaxRetry(maxInfraRetries), asynq.Timeout(s.timeout),
	}
	if time.Until(at) > 0 {
		opts = append(opts, asynq.ProcessAt(asynqx.NotBefore(at)))
	}
	_, err := asynqx.EnqueueReplacingDead(ctx, s.inspector, s.redis, tasks.QueueWebhooks, p.ID(), func(ctx context.Context) error {
		_, err := s.producer.Enqueue(ctx, tasks.TypeDeliver, p.Marshal(), opts...)
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
			return fmt.Errorf("schedule %s: %w", p.ID(), err)
		}
		return err
	})
	return err
}
