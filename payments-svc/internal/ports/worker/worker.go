// Package worker is payments-svc's asynq side: the handler of collection attempt tasks (queue
// "payments"), its retry policy, and the periodic reconciler. Each decodes its input and calls
// the application.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/asynqx"

	"rentalplatform/payments-svc/internal/app"
	"rentalplatform/payments-svc/internal/tasks"
)

// Register adds the handler of attempt tasks to mux. A run that failed is logged (asynq runs it
// again); one that waits for its time is not a failure.
func Register(mux *asynq.ServeMux, svc *app.Service, log *slog.Logger) {
	mux.HandleFunc(tasks.TypeAttempt, func(ctx context.Context, t *asynq.Task) error {
		p, err := tasks.ParseAttempt(t.Payload())
		if err != nil {
			// Retrying cannot make it decodable: archive it for inspection.
			return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
		}
		err = svc.RunAttempt(ctx, p.Request, p.N)
		if ra := (*app.RetryAt)(nil); err != nil && !errors.As(err, &ra) {
			log.WarnContext(ctx, "collection attempt failed; it runs again", "payment_request", p.Request, "attempt", p.N, "error", err.Error())
		}
		return err
	})
}

// RetryDelay has an attempt that must wait for a known time (app.RetryAt) run again then, and
// anything else after asynqx's back-off.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	if ra := (*app.RetryAt)(nil); errors.As(err, &ra) {
		return max(time.Until(ra.At), 0)
	}
	return asynqx.RetryDelay(n, err, t)
}

// Reconcile is the reconciler's job for service.Every: it queues again the attempts Redis lost
// or that went stale (app.Service.Reconcile) and says how many when there were any.
func Reconcile(svc *app.Service, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := svc.Reconcile(ctx)
		if n > 0 {
			log.InfoContext(ctx, "reconciled the collection schedule", "queued", n)
		}
		if err != nil {
			return fmt.Errorf("reconciling the collection schedule (%d queued): %w", n, err)
		}
		return nil
	}
}
