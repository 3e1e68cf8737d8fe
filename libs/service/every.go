package service

import (
	"context"
	"log/slog"
	"time"
)

// Every runs job every interval until ctx ends, logging its failures: the periodic jobs of a
// service (retention purges, sweeps that catch what a lost task missed). A failed run is
// simply tried again at the next tick.
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
