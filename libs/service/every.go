package service

import (
	"context"
	"log/slog"
	"time"
)

// EveryOption adjusts Every.
type EveryOption func(*everyConfig)

type everyConfig struct{ atStart bool }

// AtStart runs the job once as soon as Every starts, then every interval: a job whose first
// run must not wait (the payments reconciler, which restores what Redis lost while the
// service was down).
func AtStart() EveryOption { return func(c *everyConfig) { c.atStart = true } }

// Every runs job every interval until ctx ends, logging its failures: the periodic jobs of a
// service (retention purges, sweeps that catch what a lost task missed). A failed run is
// simply tried again at the next tick.
func Every(ctx context.Context, log *slog.Logger, name string, interval time.Duration, job func(context.Context) error, opts ...EveryOption) {
	var c everyConfig
	for _, o := range opts {
		o(&c)
	}
	run := func() {
		if err := job(ctx); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "periodic job failed", "job", name, "error", err.Error())
		}
	}
	if c.atStart {
		run()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			run()
		}
	}
}
