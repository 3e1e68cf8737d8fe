// Package service assembles the runtime every service process shares — JSON logger, tracing and
// metrics (with their own listener), the MongoDB database, the Fiber app with gateway identity
// and health checks, asynq workers and background loops — so each
// service's run() only composes what is its own: adapters, use cases and routes. A Spec
// describes one service (name, default address and database); Spec.Run is the whole run() of a
// service that reads only the shared settings.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/errgroup"

	"rentalplatform/libs/config"
	"rentalplatform/libs/docstore"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/mongox"
	"rentalplatform/libs/telemetry"
)

// openTimeout bounds the first exchange with MongoDB at start (which store it is), so a service
// pointed at an unreachable server fails with a message instead of hanging.
const openTimeout = 30 * time.Second

// Runtime is a started service process.
type Runtime struct {
	Name string
	Log  *slog.Logger
	Tel  *telemetry.Telemetry
	// Store is the service's database, opened with the strategy its server needs.
	Store *docstore.DB
	// App serves the service's routes; every route but /healthz and /readyz requires a valid
	// gateway identity.
	App *fiber.App

	cfg     config.Base
	logOut  *config.LogWriter // Log's output, flushed by Close
	checks  []fiberx.Check
	closers []func(context.Context) error
	bg      *background // nil until Go is first called
}

// Option changes how Start builds the runtime.
type Option func(*fiberx.Config)

// WithStreamedBodies makes the HTTP server stream request bodies and hands the requests
// stream selects their body unread (file uploads; see fiberx.Config.StreamBody). Every other
// request's body is read whole under the usual limit, as without the option.
func WithStreamedBodies(stream func(*fiber.Ctx) bool) Option {
	return func(c *fiberx.Config) { c.StreamBody = stream }
}

// Start builds the runtime from the shared configuration. On error nothing is left open.
func Start(ctx context.Context, name string, cfg config.Base, stdout io.Writer, opts ...Option) (*Runtime, error) {
	logOut := config.NewLogWriter(stdout)
	rt := &Runtime{Name: name, cfg: cfg, Log: config.Logger(logOut, name, cfg.LogLevel), logOut: logOut}
	signer, err := identity.NewSigner(cfg.InternalAuthSecret, nil)
	if err != nil {
		return nil, err
	}
	tc := cfg.Telemetry
	if tc.ServiceName == "" {
		tc.ServiceName = name
	}
	rt.Tel, err = telemetry.Setup(ctx, tc)
	if err != nil {
		return nil, err
	}
	rt.OnClose(rt.Tel.Shutdown)
	client, db, err := mongox.Connect(mongox.Config{URI: cfg.MongoURI, Database: cfg.MongoDatabase,
		AppName: name, TracerProvider: rt.Tel.TracerProvider})
	if err != nil {
		return nil, errors.Join(err, rt.Close())
	}
	rt.OnClose(client.Disconnect)
	openCtx, cancel := context.WithTimeout(ctx, openTimeout)
	rt.Store, err = docstore.Open(openCtx, db)
	cancel()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", name, err), rt.Close())
	}
	rt.AddCheck("mongodb", func(ctx context.Context) error { return mongox.Ping(ctx, db) })
	appCfg := fiberx.Config{Service: name, Logger: rt.Log, Signer: signer,
		TracerProvider: rt.Tel.TracerProvider, Propagator: rt.Tel.Propagator, Sampler: rt.Tel.Sampler,
		MeterProvider: rt.Tel.MeterProvider, Listener: "http"}
	for _, o := range opts {
		o(&appCfg)
	}
	rt.App = fiberx.New(appCfg)
	return rt, nil
}

// AddCheck adds a dependency to /readyz: the service is not ready without it.
func (rt *Runtime) AddCheck(name string, fn func(context.Context) error) {
	rt.checks = append(rt.checks, fiberx.Check{Name: name, Fn: fn})
}

// AddDegradingCheck adds a dependency to /readyz that the service serves without, less well
// (fiberx.Check.Degrades): its failure is reported, and the service stays ready.
func (rt *Runtime) AddDegradingCheck(name string, fn func(context.Context) error) {
	rt.checks = append(rt.checks, fiberx.Check{Name: name, Fn: fn, Degrades: true})
}

// OnClose registers a shutdown step; steps run in reverse order of registration.
func (rt *Runtime) OnClose(fn func(context.Context) error) { rt.closers = append(rt.closers, fn) }

// Serve registers the health endpoints, serves the service on HTTP_ADDR and its metrics on
// METRICS_ADDR until ctx ends (or either listener fails, which stops the other), shuts down
// gracefully and then closes everything registered with OnClose.
func (rt *Runtime) Serve(ctx context.Context) error {
	fiberx.Health(rt.App, rt.Log, rt.checks...)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return fiberx.Serve(gctx, rt.App, rt.cfg.HTTPAddr, "http", rt.cfg.ShutdownTimeout, rt.Log)
	})
	g.Go(func() error {
		return fiberx.Serve(gctx, fiberx.MetricsApp(rt.Tel.Metrics), rt.cfg.MetricsAddr, "metrics", rt.cfg.ShutdownTimeout, rt.Log)
	})
	return errors.Join(g.Wait(), rt.Close())
}

// Close runs the shutdown steps, each with its own deadline (the serving ctx has ended by
// then), and returns every error met.
func (rt *Runtime) Close() error {
	var errs []error
	for i := len(rt.closers) - 1; i >= 0; i-- {
		ctx, cancel := context.WithTimeout(context.Background(), rt.cfg.ShutdownTimeout)
		if err := rt.closers[i](ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s shutdown: %w", rt.Name, err))
		}
		cancel()
	}
	rt.closers = nil
	if rt.logOut != nil {
		rt.logOut.Flush() // the lines of the shutdown too
	}
	return errors.Join(errs...)
}
