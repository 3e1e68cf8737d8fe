// Package asynq schedules session expiry as asynq tasks on the "verification" queue.
package asynq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/libs/asynqx"

	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/tasks"
)

// Enqueuer is the part of *asynq.Client the scheduler uses.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Scheduler implements app.Scheduler.
type Scheduler struct {
	client Enqueuer
	prop   propagation.TextMapPropagator
}

var _ app.Scheduler = (*Scheduler)(nil)

// NewScheduler returns a scheduler enqueuing through client.
func NewScheduler(client Enqueuer, prop propagation.TextMapPropagator) *Scheduler {
	return &Scheduler{client: client, prop: prop}
}

// maxRetries is how often asynq reruns an expiry whose write failed (the store was down); the
// sweep catches the session anyway once they run out.
const maxRetries = 10

// ScheduleExpiry implements app.Scheduler. The task id is "<session>:expire": an expiry already
// queued is not queued again.
func (s *Scheduler) ScheduleExpiry(ctx context.Context, session string, at time.Time) error {
	p := tasks.Expire{Session: session}
	opts := []asynq.Option{
		asynq.Queue(tasks.QueueVerification), asynq.TaskID(p.ID()), asynq.MaxRetry(maxRetries),
		asynq.Timeout(30 * time.Second),
	}
	if time.Until(at) > 0 {
		opts = append(opts, asynq.ProcessAt(asynqx.NotBefore(at)))
	}
	_, err := s.client.EnqueueContext(ctx, asynqx.NewTask(ctx, s.prop, tasks.TypeExpire, p.Marshal(), opts...))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("schedule %s: %w", p.ID(), err)
	}
	return nil
}
