package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/outbox"
)

// Queue is a service's side of Redis: the asynq connection its tasks and published events go
// through, and the outbox relay that publishes the events its writes raise.
type Queue struct {
	Opt    asynq.RedisConnOpt
	Client *asynq.Client
	// Relay is handed to the service's docstore collections (Options.Outbox): it publishes each
	// write's events at once (the fast path), and every relay interval it publishes what the
	// fast path missed once that has waited longer than a fast path takes.
	Relay *outbox.Relay
}

// ConnectQueue connects the runtime to Redis at redisURL: the client is closed at shutdown and
// checked by /readyz, and the relay runs in the background until shutdown.
func (rt *Runtime) ConnectQueue(redisURL string, relayInterval time.Duration) (*Queue, error) {
	opt, err := asynqx.RedisOpt(redisURL)
	if err != nil {
		return nil, err
	}
	client := asynq.NewClient(opt)
	rt.OnClose(func(context.Context) error { return client.Close() })
	rt.AddCheck("redis", func(context.Context) error { return client.Ping() })
	relay := outbox.NewRelay(outbox.NewPublisher(client, rt.Tel.Propagator), rt.Log, relayInterval,
		max(2*time.Second, 2*relayInterval))
	rt.Go(func(ctx context.Context) { _ = relay.Run(ctx) })
	return &Queue{Opt: opt, Client: client, Relay: relay}, nil
}

// Work starts an asynq server taking tasks from queue with concurrency workers, each task in
// the trace it was enqueued in, handled by what register adds to the mux. It is shut down at
// shutdown, before the background loops stop and the connections close.
func (rt *Runtime) Work(q *Queue, queue string, concurrency int, register func(*asynq.ServeMux)) error {
	srv := asynq.NewServer(q.Opt, asynqx.ServerConfig(map[string]int{queue: 1}, concurrency, rt.Log))
	mux := asynq.NewServeMux()
	mux.Use(asynqx.TraceMiddleware(rt.Tel.TracerProvider, rt.Tel.Propagator))
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
func (rt *Runtime) Go(fn func(ctx context.Context)) {
	if rt.bg == nil {
		ctx, stop := context.WithCancel(context.Background())
		rt.bg = &background{ctx: ctx}
		bg := rt.bg
		rt.OnClose(func(context.Context) error { stop(); bg.wg.Wait(); return nil })
	}
	rt.bg.wg.Go(func() { fn(rt.bg.ctx) })
}

// background is the runtime's background loops.
type background struct {
	ctx context.Context
	wg  sync.WaitGroup
}
