package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/eventtask"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/service"

	asynqadapter "rentalplatform/webhooks-svc/internal/adapters/asynq"
	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	redisadapter "rentalplatform/webhooks-svc/internal/adapters/redis"
	"rentalplatform/webhooks-svc/internal/adapters/webhookhttp"
	"rentalplatform/webhooks-svc/internal/app"
	httpport "rentalplatform/webhooks-svc/internal/ports/http"
	"rentalplatform/webhooks-svc/internal/ports/portal"
	"rentalplatform/webhooks-svc/internal/ports/worker"
	"rentalplatform/webhooks-svc/internal/tasks"
)

// eventsConcurrency is how many published events are fanned out at once. Fan-out is a few
// store writes per event plus at most WEBHOOKS_INLINE_WAIT for the first attempts; it runs on
// its own asynq server so slow receivers, which hold the delivery workers for up to
// WEBHOOKS_TIMEOUT, never hold up the storing of new events.
const eventsConcurrency = 64

// eventsCheckInterval is how often an idle events worker looks for a published event: an event
// published to an empty queue waits half of it on average before its fan-out starts, and that
// wait was most of event → webhook's p50 at the platform-wide 20 ms (asynqx.TaskCheckInterval;
// docs/events.md, "Issue 31"). Idle, it costs one dequeue script per interval.
const eventsCheckInterval = 4 * time.Millisecond

// rescheduleEvery is how often, and how late, attempts whose task was lost are queued again.
const rescheduleEvery = time.Minute

// run is the composition root: it builds the service from its configuration, serves until
// ctx ends, then shuts down and returns the first problem met.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	// The webhook portal's pages take the gateway's hosted-page identity, and only it.
	rt, err := service.Start(ctx, spec().Name, cfg.Base, stdout, service.WithHostedPages(portal.Prefix))
	if err != nil {
		return err
	}
	fail := func(err error) error { return errors.Join(err, rt.Close()) }
	log := rt.Log
	q, err := rt.ConnectQueue(cfg.QueueConfig)
	if err != nil {
		return fail(err)
	}
	gen := ids.NewGenerator(nil)
	emitter := httpport.EndpointEvents(gen, time.Now)
	endpoints := mongo.NewRepository(rt.Store, q.Relay, emitter, cfg.EndpointCacheTTL)
	eventStore := mongo.NewEvents(rt.Store)
	deliveries := mongo.NewDeliveries(rt.Store)
	portals := mongo.NewPortalSessions(rt.Store)
	if err := service.EnsureIndexes(ctx, endpoints, retained{"events", eventStore, cfg.EventsRetention, log},
		retained{"webhook_deliveries", deliveries, cfg.EventsRetention, log}, portals); err != nil {
		return fail(err)
	}
	if cfg.AllowPrivate || cfg.TLSInsecure {
		log.WarnContext(ctx, "webhook delivery safeguards lifted (local development only)",
			"allow_private", cfg.AllowPrivate, "tls_insecure", cfg.TLSInsecure)
	}

	sender, err := webhookhttp.New(webhookhttp.Config{Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate, TLSInsecure: cfg.TLSInsecure,
		TracerProvider: rt.Tel.TracerProvider, MeterProvider: rt.Tel.MeterProvider, InFlight: cfg.Concurrency + cfg.InlineConcurrency})
	if err != nil {
		return fail(err)
	}
	svc := app.New(app.Deps{
		Endpoints:  endpoints,
		Events:     eventStore,
		Deliveries: deliveries,
		Portals:    portals,
		Scheduler:  asynqadapter.NewScheduler(q.Producer, q.Redis, cfg.Timeout),
		Sender:     sender,
		Feed: redisadapter.NewFeed(q.Redis, redisadapter.Config{
			Retention: cfg.StreamRetention, MaxLen: int64(cfg.StreamMaxEvents)}),
		IDs: gen,
		Log: log,
	}, app.Config{
		Schedule:          cfg.RetrySchedule,
		AutoDisableAfter:  cfg.AutoDisableAfter,
		Retention:         cfg.EventsRetention,
		AllowPrivate:      cfg.AllowPrivate,
		InlineWait:        cfg.InlineWait,
		InlineConcurrency: cfg.InlineConcurrency,
	})
	httpport.Register(rt.App, svc, httpport.StreamConfig{Ctx: ctx, Heartbeat: cfg.StreamHeartbeat,
		MaxDuration: cfg.StreamMaxDuration, Log: log})
	httpport.RegisterPortalSessions(rt.App, svc, httpport.PortalConfig{BaseURL: cfg.PortalBaseURL})
	if err := portal.Register(rt.App, svc, portal.Config{SecureCookie: strings.HasPrefix(cfg.PortalBaseURL, "https://"), Log: log}); err != nil {
		return fail(err)
	}

	if err := work(rt, q, svc, cfg); err != nil {
		return fail(err)
	}
	return rt.Serve(ctx)
}

// work starts the two asynq servers (fan-out of published events, and delivery attempts) and
// the periodic jobs.
func work(rt *service.Runtime, q *service.Queue, svc *app.Service, cfg Config) error {
	for _, s := range []struct {
		queue       string
		concurrency int
		register    func(*asynq.ServeMux, *app.Service)
		opts        []service.WorkOption
	}{
		{eventtask.Queue, eventsConcurrency, worker.RegisterEvents, []service.WorkOption{service.CheckInterval(eventsCheckInterval)}},
		{tasks.QueueWebhooks, cfg.Concurrency, worker.RegisterDeliveries, nil},
	} {
		if err := rt.Work(q, s.queue, s.concurrency, func(mux *asynq.ServeMux) { s.register(mux, svc) }, s.opts...); err != nil {
			return err
		}
	}
	rt.Go(func(ctx context.Context) {
		service.Every(ctx, rt.Log, "purge", purgeInterval(cfg.EventsRetention), worker.Purge(svc, rt.Log))
	})
	rt.Go(func(ctx context.Context) {
		service.Every(ctx, rt.Log, "reschedule", rescheduleEvery, worker.Reschedule(svc, rescheduleEvery))
	})
	rt.Go(func(ctx context.Context) {
		service.Every(ctx, rt.Log, "portal purge", time.Hour, func(ctx context.Context) error {
			_, err := svc.PurgePortalSessions(ctx)
			return err
		})
	})
	return nil
}

// retained declares the indexes of a collection kept for the events' retention: with a TTL
// index where the store has them (MongoDB), by the periodic purge alone where not (logged).
type retained struct {
	name    string
	adapter interface {
		EnsureIndexes(ctx context.Context, retention time.Duration) (ttl bool, err error)
	}
	retention time.Duration
	log       *slog.Logger
}

func (r retained) EnsureIndexes(ctx context.Context) error {
	ttl, err := r.adapter.EnsureIndexes(ctx, r.retention)
	if err == nil && !ttl {
		r.log.InfoContext(ctx, "the store has no TTL indexes; expired events are removed by the periodic purge only", "collection", r.name)
	}
	return err
}

// purgeInterval runs the retention purge about 24 times per retention period, between once a
// minute and once an hour.
func purgeInterval(retention time.Duration) time.Duration {
	return min(max(retention/24, time.Minute), time.Hour)
}
