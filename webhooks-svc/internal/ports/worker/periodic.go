package worker

import (
	"context"
	"log/slog"
	"time"

	"rentalplatform/webhooks-svc/internal/app"
)

// Every runs job every interval until ctx ends, logging its failures; a failed run is simply
// tried again at the next tick.
func Every(ctx context.Context, log *slog.Logger, name string, interval time.Duration, job func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := job(ctx); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "periodic job failed", "job", name, "error", err.Error())
			}
		}
	}
}

// Purge is the retention job.
func Purge(svc *app.Service, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		ev, del, err := svc.PurgeExpired(ctx)
		if err == nil && ev+del > 0 {
			log.InfoContext(ctx, "purged expired events", "events", ev, "deliveries", del)
		}
		return err
	}
}

// Reschedule is the job that queues again attempts whose task was lost.
func Reschedule(svc *app.Service, grace time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := svc.RescheduleOverdue(ctx, grace)
		return err
	}
}
