package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/service"
	"rentalplatform/libs/telemetry"

	asynqadapter "rentalplatform/payments-svc/internal/adapters/asynq"
	"rentalplatform/payments-svc/internal/adapters/mongo"
	"rentalplatform/payments-svc/internal/adapters/otelmetric"
	"rentalplatform/payments-svc/internal/adapters/simulator"
	"rentalplatform/payments-svc/internal/app"
	httpport "rentalplatform/payments-svc/internal/ports/http"
	"rentalplatform/payments-svc/internal/ports/worker"
	"rentalplatform/payments-svc/internal/tasks"
)

// run is the composition root: it builds the service from its configuration, serves until ctx
// ends, then shuts down and returns the first problem met.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	rt, err := service.Start(ctx, spec().Name, cfg.Base, stdout)
	if err != nil {
		return err
	}
	fail := func(err error) error { return errors.Join(err, rt.Close()) }
	log := rt.Log
	q, err := rt.ConnectQueue(cfg.QueueConfig)
	if err != nil {
		return fail(err)
	}
	scheduler := asynqadapter.NewScheduler(q.Producer, q.Redis, cfg.AttemptTimeout)
	gen := ids.NewGenerator(nil)
	agreementEvents, requestEvents := httpport.AgreementEvents(gen, time.Now), httpport.RequestEvents(gen, time.Now)
	agreements := mongo.NewAgreements(rt.Store, q.Relay, agreementEvents)
	requests := mongo.NewRequests(rt.Store, q.Relay, requestEvents)
	simulatorDB, err := rt.Store.Sibling(ctx, cfg.SimulatorDatabase)
	if err != nil {
		return fail(err)
	}
	processor := simulator.New(simulatorDB, time.Now)
	if err := service.EnsureIndexes(ctx, agreements, requests, processor); err != nil {
		return fail(err)
	}
	log.InfoContext(ctx, "live-mode charges are refused: no payment processor adapter is configured")
	outcomes, err := otelmetric.NewOutcomes(rt.Tel.MeterProvider)
	if err != nil {
		return fail(err)
	}

	svc := app.New(app.Deps{
		Agreements: agreements,
		Requests:   requests,
		Test:       processor,
		Scheduler:  scheduler,
		Outcomes:   outcomes,
		Now:        time.Now,
		IDs:        gen,
		Log:        log,
		Detach:     telemetry.Detached,
		StartSpan:  telemetry.SpanStarter(rt.Tel.TracerProvider, "rentalplatform/payments-svc"),
	}, app.Config{
		ClaimTTL:       cfg.claimTTL(),
		CancelWait:     cfg.CancelWait,
		AdvanceWait:    cfg.AdvanceWait,
		ReconcileGrace: cfg.ReconcileInterval,
		// A first attempt run inline has the bound a queued one has (the scheduler's).
		InlineConcurrency: cfg.InlineConcurrency,
		InlineBacklog:     cfg.InlineBacklog,
		AttemptTimeout:    cfg.AttemptTimeout,
	})
	httpport.Register(rt.App, svc)

	if err := work(rt, q, svc, cfg); err != nil {
		return fail(err)
	}
	return rt.Serve(ctx)
}

// work starts the attempts' worker and the reconciler.
func work(rt *service.Runtime, q *service.Queue, svc *app.Service, cfg Config) error {
	// An attempt runs when it is due, days after the request that scheduled it (a retry): in
	// a trace of its own, linked.
	if err := rt.Work(q, tasks.QueuePayments, cfg.Concurrency,
		func(mux *asynq.ServeMux) { worker.Register(mux, svc, rt.Log) },
		service.LinkedTraces(), service.RetryDelay(worker.RetryDelay)); err != nil {
		return err
	}
	// The runners of first attempts (app.StartInline) stop before the worker and the queue's
	// connections (shutdown steps run last-registered first), so what they did not start is
	// queued; the HTTP server has stopped by then, so no create hands them any more.
	rt.OnClose(svc.StartInline())
	// The reconciler runs at once at start (what Redis lost while the service was down is
	// queued again without waiting an interval), then every interval.
	rt.Go(func(ctx context.Context) {
		service.Every(ctx, rt.Log, "reconcile", cfg.ReconcileInterval, worker.Reconcile(svc, rt.Log), service.AtStart())
	})
	return nil
}
