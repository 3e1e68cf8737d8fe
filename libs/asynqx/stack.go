package asynqx

import (
	"context"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/stack"
)

// GrowStack is the first middleware of a worker: asynq runs each task in a goroutine of its own,
// whose stack the handler's work would otherwise grow by doubling it several times (package
// stack).
func GrowStack(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		stack.Grow()
		return h.ProcessTask(ctx, t)
	})
}
