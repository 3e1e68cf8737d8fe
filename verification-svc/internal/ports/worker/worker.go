// Package worker is verification-svc's asynq side: the handler of session expiry tasks (queue
// "verification") and the expiry sweep. Each decodes its input and calls the application.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/tasks"
)

// Register adds the expiry handler to mux.
func Register(mux *asynq.ServeMux, svc *app.Service) {
	mux.HandleFunc(tasks.TypeExpire, func(ctx context.Context, t *asynq.Task) error {
		p, err := tasks.ParseExpire(t.Payload())
		if err != nil {
			// Retrying cannot make it decodable: archive it for inspection.
			return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
		}
		return svc.Expire(ctx, p.Session)
	})
}

// Sweep is the periodic job that expires sessions whose task was lost, grace after their
// expires_at.
func Sweep(svc *app.Service, log *slog.Logger, grace time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := svc.ExpireOverdue(ctx, grace)
		if n > 0 {
			log.InfoContext(ctx, "expiry sweep: expired sessions whose task had not run", "sessions", n)
		}
		return err
	}
}
