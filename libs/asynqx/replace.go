package asynqx

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// allQueues is asynq's set of queue names (its internal base.AllQueues), which its Inspector
// reads to know a queue exists.
const allQueues = "asynq:queues"

// RegisterQueue adds queue to asynq's set of queues. asynq's client adds a queue to it on the
// first enqueue of a process only, so after Redis lost its data (a flush, a restart without
// persistence) the set lacks a queue that holds tasks again, and the Inspector answers
// ErrQueueNotFound for every task of it until the process restarts.
func RegisterQueue(ctx context.Context, rc redis.UniversalClient, queue string) error {
	if err := rc.SAdd(ctx, allQueues, queue).Err(); err != nil {
		return fmt.Errorf("register queue %s: %w", queue, err)
	}
	return nil
}

// EnqueueReplacingDead runs enqueue, which queues a task under the fixed id on queue and
// returns asynq.ErrTaskIDConflict as it is. asynq refuses a second task of an id it still
// holds, and it holds a task it archived (its retries ran out while the store was down) or
// kept as completed: such a task would block its id for good, and with it the sweep that
// repairs lost tasks. So on a conflict the task holding the id is inspected and, when it is
// archived or completed, deleted and queued again. A task that is queued, running, scheduled
// or waiting for a retry is left as it is: work that is merely late keeps its place. queued
// reports whether this call queued the task. rc is the Redis insp reads, where a queue that
// Redis forgot is registered again (RegisterQueue).
func EnqueueReplacingDead(ctx context.Context, insp *asynq.Inspector, rc redis.UniversalClient, queue, id string, enqueue func(context.Context) error) (queued bool, err error) {
	err = enqueue(ctx)
	if !errors.Is(err, asynq.ErrTaskIDConflict) {
		return err == nil, err
	}
	info, err := insp.GetTaskInfo(queue, id)
	if errors.Is(err, asynq.ErrQueueNotFound) {
		if err := RegisterQueue(ctx, rc, queue); err != nil {
			return false, fmt.Errorf("enqueue %s: %w", id, err)
		}
		info, err = insp.GetTaskInfo(queue, id)
	}
	switch {
	case errors.Is(err, asynq.ErrTaskNotFound):
		// It ran and went between the two calls (no retention is set): its outcome is stored.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("enqueue %s: inspect the existing task: %w", id, err)
	case info.State != asynq.TaskStateArchived && info.State != asynq.TaskStateCompleted:
		return false, nil
	}
	if err := insp.DeleteTask(queue, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		return false, fmt.Errorf("enqueue %s: replace the %s task: %w", id, info.State, err)
	}
	err = enqueue(ctx)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return false, nil // another caller replaced it first
	}
	return err == nil, err
}
