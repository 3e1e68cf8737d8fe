package asynqx

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// EnqueueReplacingDead runs enqueue, which queues a task under the fixed id on queue and
// returns asynq.ErrTaskIDConflict as it is. asynq refuses a second task of an id it still
// holds, and it holds a task it archived (its retries ran out while the store was down) or
// kept as completed: such a task would block its id for good, and with it the sweep that
// repairs lost tasks. So on a conflict the task holding the id is inspected and, when it is
// archived or completed, deleted and queued again. A task that is queued, running, scheduled
// or waiting for a retry is left as it is: work that is merely late keeps its place. queued
// reports whether this call queued the task.
func EnqueueReplacingDead(ctx context.Context, insp *asynq.Inspector, queue, id string, enqueue func(context.Context) error) (queued bool, err error) {
	err = enqueue(ctx)
	if !errors.Is(err, asynq.ErrTaskIDConflict) {
		return err == nil, err
	}
	info, err := insp.GetTaskInfo(queue, id)
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
