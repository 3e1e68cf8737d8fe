package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/config"
	"rentalplatform/libs/outbox"
)

// Queue is a service's side of Redis: the asynq connection its tasks and published events go
// through, and the outbox relay that publishes the events its writes raise.
type Queue struct {
	Opt    asynq.RedisConnOpt
	Client *asynq.Client
	// Redis is the connection pool Client uses, for a service's own keys and its asynq
	// inspector (asynq.NewInspectorFromRedisClient): one pool serves them all.
	Redis redis.UniversalClient
	// Producer enqueues through Client, each task in a producer span of the caller's trace: a
	// service's own task scheduler enqueues with it.
	Producer *asynqx.Producer
	// Relay is handed to the service's docstore collections (Options.Outbox): it publishes each
	// write's events at once (the fast path), and every relay interval it publishes what the
	// fast path missed once that has waited longer than a fast path takes.
	Relay *outbox.Relay
}

// QueueConfig is the settings of a service's queue: REDIS_URL, OUTBOX_RELAY_INTERVAL and
// OUTBOX_RETENTION.
type QueueConfig struct {
	RedisURL string
	// OutboxRelayInterval is how often the relay sweeps the outboxes for events the fast path
	// did not publish.
	OutboxRelayInterval time.Duration
	// OutboxRetention is how long published events stay in their outboxes, on the embedded
	// store, to be published again if Redis loses its data (outbox.Relay.Retain); 0 keeps none.
	OutboxRetention time.Duration
}

// ReadQueueConfig reads the queue's settings through r, which collects their problems with the
// service's others.
func ReadQueueConfig(r *config.Reader) QueueConfig {
	c := QueueConfig{
		RedisURL:            r.String("REDIS_URL", "redis://127.0.0.1:6379/0"),
		OutboxRelayInterval: r.PositiveDuration("OUTBOX_RELAY_INTERVAL", time.Second),
		OutboxRetention:     r.Duration("OUTBOX_RETENTION", 10*time.Minute),
	}
	if _, err := asynqx.RedisOpt(c.RedisURL); err != nil {
		r.Fail(err)
	}
	return c
}

// ConnectQueue connects the runtime to Redis: the client is closed at shutdown and reported by
// /readyz (a degrading check), and the relay runs in the background until shutdown.
func (rt *Runtime) ConnectQueue(cfg QueueConfig) (*Queue, error) {
	opt, err := asynqx.RedisOpt(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	relayInterval := cfg.OutboxRelayInterval
	rc, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, fmt.Errorf("redis: unexpected client type %T", opt.MakeRedisClient())
	}
	// A client on a pool it did not make refuses to close it (asynq): the pool is closed here.
	client := asynq.NewClientFromRedisClient(rc)
	rt.OnClose(func(context.Context) error { return rc.Close() })
	// Without Redis the API still serves: events wait in their outboxes for the relay, and the
	// sweeps rebuild what the queues lose.
	rt.AddDegradingCheck("redis", func(context.Context) error { return client.Ping() })
	producer := asynqx.NewProducer(client, rt.Tel.TracerProvider, rt.Tel.Propagator)
	relay := outbox.NewRelay(outbox.NewPublisher(producer), rt.Log, relayInterval,
		max(2*time.Second, 2*relayInterval))
	relay.Retain(cfg.OutboxRetention, epoch{redis: rc, key: "outbox:epoch:" + rt.Name})
	// Before anything is published: on a new Redis, what this process publishes is not
	// published again (outbox.Relay.Claim). Unreachable, the relay's passes take it over.
	claimCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err = relay.Claim(claimCtx)
	cancel()
	if err != nil {
		rt.Log.Warn("outbox relay: the events queue's marker could not be read or set; the relay's passes will", "error", err.Error())
	}
	rt.Go(func(ctx context.Context) { _ = relay.Run(ctx) })
	return &Queue{Opt: opt, Client: client, Redis: rc, Producer: producer, Relay: relay}, nil
}

// WorkOption adjusts a worker started by Work.
type WorkOption func(*workConfig)

type workConfig struct {
	lineage       asynqx.Lineage
	retryDelay    asynq.RetryDelayFunc
	checkInterval time.Duration
}

// CheckInterval replaces asynqx.TaskCheckInterval as how long an idle worker waits before it
// looks for a task again (asynq sleeps between half and one and a half of it): the latency a
// task meets when it comes to an empty queue, against one dequeue script per interval and
// worker server when nothing comes. For a queue whose tasks carry user-visible latency.
func CheckInterval(d time.Duration) WorkOption {
	return func(c *workConfig) { c.checkInterval = d }
}

// LinkedTraces has each task handled in a trace of its own, linked to the request (or task)
// that enqueued it, rather than in that trace (asynqx.Linked): for tasks scheduled for later.
func LinkedTraces() WorkOption { return func(c *workConfig) { c.lineage = asynqx.Linked } }

// RetryDelay replaces asynqx.RetryDelay as the delay before asynq runs a failed task again.
func RetryDelay(fn asynq.RetryDelayFunc) WorkOption {
	return func(c *workConfig) { c.retryDelay = fn }
}

// Work starts an asynq server taking tasks from queue with concurrency workers, handled by
// what register adds to the mux: each task in a consumer span of the trace it was enqueued in
// (or linked to it: LinkedTraces), and measured (asynqx.MetricsMiddleware). The queue's depth
// and latency are reported with the metrics (asynqx.ObserveQueues). The server is shut down at
// shutdown, before the background loops stop and the connections close.
func (rt *Runtime) Work(q *Queue, queue string, concurrency int, register func(*asynq.ServeMux), opts ...WorkOption) error {
	var wc workConfig
	for _, o := range opts {
		o(&wc)
	}
	cfg := asynqx.ServerConfig(map[string]int{queue: 1}, concurrency, rt.Log)
	if wc.retryDelay != nil {
		cfg.RetryDelayFunc = wc.retryDelay
	}
	if wc.checkInterval > 0 {
		cfg.TaskCheckInterval = wc.checkInterval
	}
	measure, err := asynqx.MetricsMiddleware(rt.Tel.MeterProvider)
	if err != nil {
		return fmt.Errorf("%s worker metrics: %w", queue, err)
	}
	inspector := asynq.NewInspector(q.Opt)
	rt.OnClose(func(context.Context) error { return inspector.Close() })
	if _, err := asynqx.ObserveQueues(rt.Tel.MeterProvider, inspector, queue); err != nil {
		return fmt.Errorf("%s queue metrics: %w", queue, err)
	}
	srv := asynq.NewServer(q.Opt, cfg)
	mux := asynq.NewServeMux()
	// Measured outside the span, so the duration includes it; the span's error status and the
	// outcome label come from the same returned error. The stack is grown before either.
	mux.Use(asynqx.GrowStack, measure, asynqx.TraceMiddleware(rt.Tel.TracerProvider, rt.Tel.Propagator, wc.lineage))
	register(mux)
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start %s worker: %w", queue, err)
	}
	rt.OnClose(func(context.Context) error { srv.Shutdown(); return nil })
	return nil
}

// Go runs fn in the background until shutdown: fn's context ends, and shutdown waits for fn to
// return, before the connections registered earlier are closed (closers run last-registered
// first).
func (p *Process) Go(fn func(ctx context.Context)) {
	if p.bg == nil {
		ctx, stop := context.WithCancel(context.Background())
		p.bg = &background{ctx: ctx}
		bg := p.bg
		p.OnClose(func(context.Context) error { stop(); bg.wg.Wait(); return nil })
	}
	p.bg.wg.Go(func() { fn(p.bg.ctx) })
}

// background is the runtime's background loops.
type background struct {
	ctx context.Context
	wg  sync.WaitGroup
}

// epoch is the outbox relay's marker of what Redis holds (outbox.Epoch): one key per service,
// set when the relay has published again what a lost Redis held, missing when Redis lost its
// data since (or is new).
type epoch struct {
	redis redis.UniversalClient
	key   string
}

func (e epoch) Lost(ctx context.Context) (bool, error) {
	n, err := e.redis.Exists(ctx, e.key).Result()
	if err != nil {
		return false, fmt.Errorf("read the events queue's marker: %w", err)
	}
	return n == 0, nil
}

func (e epoch) Mark(ctx context.Context) error {
	if err := e.redis.Set(ctx, e.key, time.Now().UTC().Format(time.RFC3339), 0).Err(); err != nil {
		return fmt.Errorf("set the events queue's marker: %w", err)
	}
	return nil
}
