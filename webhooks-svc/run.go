package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox"
	"rentalplatform/libs/service"

	asynqadapter "rentalplatform/webhooks-svc/internal/adapters/asynq"
	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/adapters/webhookhttp"
	"rentalplatform/webhooks-svc/internal/app"
	httpport "rentalplatform/webhooks-svc/internal/ports/http"
	"rentalplatform/webhooks-svc/internal/ports/worker"
	"rentalplatform/webhooks-svc/internal/tasks"
)

// eventsConcurrency is how many published events are fanned out at once. Fan-out is a few
// store writes per event plus at most WEBHOOKS_INLINE_WAIT for the first attempts; it runs on
// its own asynq server so slow receivers, which hold the delivery workers for up to
// WEBHOOKS_TIMEOUT, never hold up the storing of new events.
const eventsConcurrency = 64

// rescheduleEvery is how often, and how late, attempts whose task was lost are queued again.
const rescheduleEvery = time.Minute

// run is the composition root: it builds the service from its configuration, serves until
// ctx ends, then shuts down and returns the first problem met.
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
	client := asynq.NewClient(redisOpt)
	rt.OnClose(func(context.Context) error { return client.Close() })
	rt.AddCheck("redis", func(context.Context) error { return client.Ping() })

	// Outbox: the store hands the events of each write to the relay's fast path; the relay
	// catches what it missed once it has waited longer than a fast path takes.
	relay := outbox.NewRelay(outbox.NewPublisher(client, prop), log, cfg.OutboxRelayInterval,
		max(2*time.Second, 2*cfg.OutboxRelayInterval))
	endpoints := mongo.NewRepository(rt.Store, relay, cfg.EndpointCacheTTL)
	eventStore := mongo.NewEvents(rt.Store)
	deliveries := mongo.NewDeliveries(rt.Store)
	if err := endpoints.EnsureIndexes(ctx); err != nil {
		return fail(err)
	}
	ttlEvents, err := eventStore.EnsureIndexes(ctx, cfg.EventsRetention)
	if err != nil {
		return fail(err)
	}
	ttlDeliveries, err := deliveries.EnsureIndexes(ctx, cfg.EventsRetention)
	if err != nil {
		return fail(err)
	}
	if !ttlEvents || !ttlDeliveries {
		log.InfoContext(ctx, "the store has no TTL indexes; expired events are removed by the periodic purge only")
	}
	if cfg.AllowPrivate || cfg.TLSInsecure {
		log.WarnContext(ctx, "webhook delivery safeguards lifted (local development only)",
			"allow_private", cfg.AllowPrivate, "tls_insecure", cfg.TLSInsecure)
	}

	svc := app.New(app.Deps{
		Endpoints:  endpoints,
		Events:     eventStore,
		Deliveries: deliveries,
		Scheduler:  asynqadapter.NewScheduler(client, prop, cfg.Timeout),
		Sender:     webhookhttp.New(webhookhttp.Config{Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate, TLSInsecure: cfg.TLSInsecure}),
		Clock:      app.ClockFunc(time.Now),
		IDs:        ids.NewGenerator(nil),
		Log:        log,
	}, app.Config{
		Schedule:          cfg.RetrySchedule,
		AutoDisableAfter:  cfg.AutoDisableAfter,
		Retention:         cfg.EventsRetention,
		AllowPrivate:      cfg.AllowPrivate,
		InlineWait:        cfg.InlineWait,
		InlineConcurrency: cfg.InlineConcurrency,
		RenderEndpoint:    httpport.EndpointObject,
	})
	httpport.Register(rt.App, svc)

	// Two asynq servers: fan-out of published events, and delivery attempts.
	for _, s := range []struct {
		queue       string
		concurrency int
		register    func(*asynq.ServeMux, *app.Service)
	}{
		{events.Queue, eventsConcurrency, worker.RegisterEvents},
		{tasks.QueueWebhooks, cfg.Concurrency, worker.RegisterDeliveries},
	} {
		srv := asynq.NewServer(redisOpt, asynqx.ServerConfig(map[string]int{s.queue: 1}, s.concurrency, log))
		mux := asynq.NewServeMux()
		mux.Use(asynqx.TraceMiddleware(tp, prop))
		s.register(mux, svc)
		if err := srv.Start(mux); err != nil {
			return fail(fmt.Errorf("start %s worker: %w", s.queue, err))
		}
		rt.OnClose(func(context.Context) error { srv.Shutdown(); return nil })
	}

	// Background loops, stopped first at shutdown (closers run last-registered first), while
	// Redis and MongoDB are still open.
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = relay.Run(bg) })
	wg.Go(func() {
		worker.Every(bg, log, "purge", purgeInterval(cfg.EventsRetention), worker.Purge(svc, log))
	})
	wg.Go(func() {
		worker.Every(bg, log, "reschedule", rescheduleEvery, worker.Reschedule(svc, rescheduleEvery))
	})
	rt.OnClose(func(context.Context) error { stop(); wg.Wait(); return nil })

	return rt.Serve(ctx)
}

// purgeInterval runs the retention purge about 24 times per retention period, between once a
// minute and once an hour.
func purgeInterval(retention time.Duration) time.Duration {
	return min(max(retention/24, time.Minute), time.Hour)
}
