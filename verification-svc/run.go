package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/service"

	asynqadapter "rentalplatform/verification-svc/internal/adapters/asynq"
	"rentalplatform/verification-svc/internal/adapters/mongo"
	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/ports/hosted"
	httpport "rentalplatform/verification-svc/internal/ports/http"
	"rentalplatform/verification-svc/internal/ports/worker"
	"rentalplatform/verification-svc/internal/tasks"
)

// sweepGrace is how long past its expires_at a session is left to its expiry task before the
// sweep expires it: the task normally runs within a second.
const sweepGrace = 5 * time.Second

// run is the composition root: it builds the service from its configuration, serves until
// ctx ends, then shuts down and returns the first problem met.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	// The hosted page takes the gateway's hosted-page identity, and only it (no API key).
	rt, err := service.Start(ctx, spec().Name, cfg.Base, stdout, service.WithHostedPages(hosted.Prefix))
	if err != nil {
		return err
	}
	fail := func(err error) error { return errors.Join(err, rt.Close()) }
	q, err := rt.ConnectQueue(cfg.QueueConfig)
	if err != nil {
		return fail(err)
	}
	gen := ids.NewGenerator(nil)
	sessions := mongo.NewSessions(rt.Store, q.Relay, httpport.SessionEvents(gen, time.Now))
	if err := service.EnsureIndexes(ctx, sessions); err != nil {
		return fail(err)
	}
	if cfg.WebhookAllowPrivate {
		rt.Log.WarnContext(ctx, "webhook_url private-address guard lifted (local development only)")
	}

	scheduler := asynqadapter.NewScheduler(q.Producer)
	rt.Go(func(ctx context.Context) { scheduler.Run(ctx, rt.Log) })
	svc := app.New(app.Deps{
		Sessions:  sessions,
		Scheduler: scheduler,
		// No verification provider exists yet: live sessions stay created (docs/api.md).
		Provider: nil,
		Now:      time.Now,
		IDs:      gen,
		Log:      rt.Log,
	}, app.Config{
		TTL:          cfg.SessionTTL,
		AllowPrivate: cfg.WebhookAllowPrivate,
	})
	httpport.Register(rt.App, svc)
	if err := hosted.Register(rt.App, svc, rt.Log); err != nil {
		return fail(err)
	}
	if err := work(rt, q, svc, cfg); err != nil {
		return fail(err)
	}
	return rt.Serve(ctx)
}

// work starts the expiries' worker and the expiry sweep.
func work(rt *service.Runtime, q *service.Queue, svc *app.Service, cfg Config) error {
	// An expiry runs long after the create that scheduled it: in a trace of its own, linked.
	if err := rt.Work(q, tasks.QueueVerification, cfg.ExpiryConcurrency, func(mux *asynq.ServeMux) { worker.Register(mux, svc) },
		service.LinkedTraces()); err != nil {
		return err
	}
	rt.Go(func(ctx context.Context) {
		service.Every(ctx, rt.Log, "expiry sweep", cfg.ExpirySweep, worker.Sweep(svc, rt.Log, sweepGrace))
	})
	return nil
}
