package worker

import (
	"context"
	"log/slog"
	"time"

	"rentalplatform/webhooks-svc/internal/app"
)

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

// Reschedule is the job that finishes fan-outs and queues again attempts whose task was lost.
func Reschedule(svc *app.Service, grace time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := svc.CompleteFanOuts(ctx, grace); err != nil {
			return err
		}
		_, err := svc.RescheduleOverdue(ctx, grace)
		return err
	}
}
