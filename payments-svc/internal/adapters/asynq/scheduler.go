// Package asynq schedules collection attempts as asynq tasks on the "payments" queue, one task
// per request and attempt (ProcessAt its due time, TaskID "<request>:<attempt>").
package asynq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"rentalplatform/libs/asynqx"

	"rentalplatform/payments-svc/internal/app"
	"rentalplatform/payments-svc/internal/tasks"
)

// epochKey marks a Redis that holds this service's schedule. Redis loses it with everything
// else (a flush, a restart without persistence), which is how Lost notices.
const epochKey = "payments:schedule-epoch"

// maxInfraRetries is how often asynq reruns an attempt task whose run failed (the store or the
// processor did not answer); declines are never asynq retries.
const maxInfraRetries = 25

// Scheduler implements app.Scheduler.
type Scheduler struct {
	producer  *asynqx.Producer
	inspector *asynq.Inspector
	redis     redis.UniversalClient
	timeout   time.Duration
}

var _ app.Scheduler = (*Scheduler)(nil)

// NewScheduler returns a scheduler that enqueues with producer (in producer spans of the
// caller's trace) and reads and marks the queue through rc, the same Redis pool (the service
// kit's Queue); attemptTimeout bounds one run of an attempt task.
func NewScheduler(producer *asynqx.Producer, rc redis.UniversalClient, attemptTimeout time.Duration) *Scheduler {
	return &Scheduler{producer: producer, inspector: asynq.NewInspectorFromRedisClient(rc), redis: rc, timeout: attemptTimeout}
}

// Schedule implements app.Scheduler. A task of the attempt that asynq archived or kept as
// completed is replaced; one that is queued, running or waiting for a retry is left as it is
// (asynqx.EnqueueReplacingDead): an attempt merely late because the queue is backed up keeps
// its place.
func (s *Scheduler) Schedule(ctx context.Context, request string, n int, at time.Time) (bool, error) {
	return asynqx.EnqueueReplacingDead(ctx, s.inspector, s.redis, tasks.QueuePayments, tasks.Attempt{Request: request, N: n}.ID(),
		func(ctx context.Context) error { return s.enqueue(ctx, request, n, at) })
}

// enqueue queues the task; a task id conflict is returned as is.
func (s *Scheduler) enqueue(ctx context.Context, request string, n int, at time.Time) error {
	p := tasks.Attempt{Request: request, N: n}
	opts := []asynq.Option{
		asynq.Queue(tasks.QueuePayments), asynq.TaskID(p.ID()),
		asynq.MaxRetry(maxInfraRetries), asynq.Timeout(s.timeout),
	}
	if time.Until(at) > 0 {
		opts = append(opts, asynq.ProcessAt(asynqx.NotBefore(at)))
	}
	_, err := s.producer.Enqueue(ctx, tasks.TypeAttempt, p.Marshal(), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("schedule %s: %w", p.ID(), err)
	}
	return err
}

// RunNow implements app.Scheduler: a scheduled (or retrying) task is moved to the queue as is;
// a missing one (Redis lost it) is queued.
func (s *Scheduler) RunNow(ctx context.Context, request string, n int) error {
	id := tasks.Attempt{Request: request, N: n}.ID()
	err := s.inspector.RunTask(tasks.QueuePayments, id)
	if errors.Is(err, asynq.ErrQueueNotFound) {
		// Redis lost the queue's registration (a flush), maybe not the task: register it again.
		if err := asynqx.RegisterQueue(ctx, s.redis, tasks.QueuePayments); err != nil {
			return err
		}
		err = s.inspector.RunTask(tasks.QueuePayments, id)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		_, err := s.Schedule(ctx, request, n, time.Now())
		return err
	}
	// RunTask refuses a task that is pending or running already: it runs now anyway.
	if info, ierr := s.inspector.GetTaskInfo(tasks.QueuePayments, id); ierr == nil &&
		(info.State == asynq.TaskStatePending || info.State == asynq.TaskStateActive) {
		return nil
	}
	_, err = s.Schedule(ctx, request, n, time.Now())
	return err
}

// Unschedule implements app.Scheduler.
func (s *Scheduler) Unschedule(_ context.Context, request string, n int) error {
	id := tasks.Attempt{Request: request, N: n}.ID()
	err := s.inspector.DeleteTask(tasks.QueuePayments, id)
	if err == nil || errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	// A running task cannot be deleted; it finds the request cancelled and does nothing.
	if info, ierr := s.inspector.GetTaskInfo(tasks.QueuePayments, id); ierr == nil && info.State == asynq.TaskStateActive {
		return nil
	}
	return fmt.Errorf("unschedule %s: %w", id, err)
}

// Lost implements app.Scheduler with a marker key: when it is missing, Redis does not hold
// what this service scheduled (a new or flushed Redis), and it is set again.
func (s *Scheduler) Lost(ctx context.Context) (bool, error) {
	set, err := s.redis.SetNX(ctx, epochKey, time.Now().UTC().Format(time.RFC3339), 0).Result()
	if err != nil {
		return false, fmt.Errorf("check the schedule marker: %w", err)
	}
	return set, nil
}
