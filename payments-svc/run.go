package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox"
	"rentalplatform/libs/service"

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
	log, tp, prop := rt.Log, rt.Tel.TracerProvider, rt.Tel.Propagator

	redisOpt, err := asynqx.RedisOpt(cfg.RedisURL)
	if err != nil {
		return fail(err)
	}
	scheduler, err := asynqadapter.NewScheduler(redisOpt, tp, prop, cfg.AttemptTimeout)
	if err != nil {
		return fail(err)
	}
	rt.OnClose(func(context.Context) error { return scheduler.Close() })
	rt.AddDegradingCheck("redis", scheduler.Ping)

	relay := outbox.NewRelay(outbox.NewPublisher(scheduler.Producer()), log, cfg.OutboxRelayInterval,
		max(2*time.Second, 2*cfg.OutboxRelayInterval))
	agreements := mongo.NewAgreements(rt.Store, relay)
	requests := mongo.NewRequests(rt.Store, relay)
	if err := agreements.EnsureIndexes(ctx); err != nil {
		return fail(err)
	}
	if err := requests.EnsureIndexes(ctx); err != nil {
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
		Test:       simulator.New(rt.Store.Sibling(cfg.SimulatorDatabase), time.Now),
		Scheduler:  scheduler,
		Outcomes:   outcomes,
		Now:        time.Now,
		IDs:        ids.NewGenerator(nil),
		Log:        log,
	}, app.Config{
		ClaimTTL:        cfg.claimTTL(),
		CancelWait:      cfg.CancelWait,
		AdvanceWait:     cfg.AdvanceWait,
		ReconcileGrace:  cfg.ReconcileInterval,
		RenderAgreement: httpport.AgreementObject,
		RenderRequest:   httpport.RequestObject,
		RenderCharge:    httpport.ChargeObject,
	})
	httpport.Register(rt.App, svc)

	// An attempt runs when it is due, days after the request that scheduled it (a retry): in
	// a trace of its own, linked. The scheduler keeps its own asynq client; the worker needs
	// only the connection options.
	if err := rt.Work(&service.Queue{Opt: redisOpt}, tasks.QueuePayments, cfg.Concurrency,
		func(mux *asynq.ServeMux) { worker.Register(mux, svc, log) },
		service.LinkedTraces(), service.RetryDelay(worker.RetryDelay)); err != nil {
		return fail(err)
	}

	// Background loops, stopped first at shutdown (closers run last-registered first), while
	// Redis and MongoDB are still open.
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = relay.Run(bg) })
	wg.Go(func() { worker.Reconcile(bg, svc, log, cfg.ReconcileInterval) })
	rt.OnClose(func(context.Context) error { stop(); wg.Wait(); return nil })

	return rt.Serve(ctx)
}
