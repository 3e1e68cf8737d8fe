// Package service assembles what every process of the platform shares, so that each one's
// run() composes only what is its own (adapters, use cases and routes):
//
//   - Open starts a Process: the JSON logger, tracing and metrics (served on their own
//     listener), the MongoDB database, shutdown steps, background loops and listeners. The
//     gateway, which builds its own public and admin apps, uses it as it is.
//   - Start starts a service's Runtime: a Process with the Fiber app that verifies the gateway's
//     identity, health checks, and the asynq queue and workers (ConnectQueue, Work).
//
// A Spec names one service and its defaults of the shared settings.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/errgroup"

	"rentalplatform/libs/config"
	"rentalplatform/libs/docstore"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/health"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/logging"
	"rentalplatform/libs/mongox"
	"rentalplatform/libs/telemetry"
)

// openTimeout bounds the first exchange with MongoDB at start (which store it is), so a service
// pointed at an unreachable server fails with a message instead of hanging.
const openTimeout = 30 * time.Second

// Process is a started process of the platform: what the gateway and every service share.
type Process struct {
	Name string
	Log  *slog.Logger
	Tel  *telemetry.Telemetry
	// Store is the process's database, opened with the strategy its server needs.
	Store *docstore.DB

	cfg       config.Base
	logOut    *logging.LogWriter // Log's output, flushed by Close
	closers   []func(context.Context) error
	bg        *background // nil until Go is first called
	listeners []listener
}

// listener is an app Serve serves, on its address, under its name (in logs and the line that
// gives the bound port).
type listener struct {
	name, addr string
	app        *fiber.App
	wrap       func(net.Listener) net.Listener // nil: none
}

// ListenOption changes how Listen serves one listener.
type ListenOption func(*listener)

// WrapListener has the listener's net.Listener wrapped by wrap before it serves (fiberx.Serve).
func WrapListener(wrap func(net.Listener) net.Listener) ListenOption {
	return func(l *listener) { l.wrap = wrap }
}

// Open starts the parts every process shares from the shared configuration. On error nothing
// is left open.
func Open(ctx context.Context, name string, cfg config.Base, stdout io.Writer) (*Process, error) {
	logOut := logging.NewLogWriter(stdout)
	p := &Process{Name: name, cfg: cfg, Log: logging.Logger(logOut, name, cfg.LogLevel), logOut: logOut}
	tc := cfg.Telemetry
	if tc.ServiceName == "" {
		tc.ServiceName = name
	}
	var err error
	if p.Tel, err = telemetry.Setup(ctx, tc); err != nil {
		return nil, fmt.Errorf("%s telemetry: %w", name, err)
	}
	p.OnClose(p.Tel.Shutdown)
	client, db, err := mongox.Connect(mongox.Config{URI: cfg.MongoURI, Database: cfg.MongoDatabase,
		AppName: name, TracerProvider: p.Tel.TracerProvider})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", name, err), p.Close())
	}
	p.OnClose(client.Disconnect)
	openCtx, cancel := context.WithTimeout(ctx, openTimeout)
	p.Store, err = docstore.Open(openCtx, db)
	cancel()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", name, err), p.Close())
	}
	return p, nil
}

// PingStore checks that MongoDB answers: a readiness check.
func (p *Process) PingStore(ctx context.Context) error { return mongox.Ping(ctx, p.Store.Database()) }

// OnClose registers a shutdown step; steps run in reverse order of registration.
func (p *Process) OnClose(fn func(context.Context) error) { p.closers = append(p.closers, fn) }

// Listen has Serve serve app on addr, as the listener called name.
func (p *Process) Listen(name, addr string, app *fiber.App, opts ...ListenOption) {
	l := listener{name: name, addr: addr, app: app}
	for _, o := range opts {
		o(&l)
	}
	p.listeners = append(p.listeners, l)
}

// Serve serves every listener and the metrics (on METRICS_ADDR) until ctx ends, or until one
// listener fails, which stops the others; it shuts them down gracefully and then runs the
// steps registered with OnClose (background loops end first, see Go).
func (p *Process) Serve(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, l := range append(p.listeners, listener{name: "metrics", addr: p.cfg.MetricsAddr, app: fiberx.MetricsApp(p.Tel.Metrics, p.cfg.Profiles)}) {
		g.Go(func() error { return fiberx.Serve(gctx, l.app, l.addr, l.name, p.cfg.ShutdownTimeout, p.Log, l.wrap) })
	}
	err := errors.Join(g.Wait(), p.Close())
	p.Log.Info("stopped")
	p.logOut.Flush()
	return err
}

// Close runs the shutdown steps, each with its own deadline (the serving ctx has ended by
// then), and returns every error met.
func (p *Process) Close() error {
	var errs []error
	for i := len(p.closers) - 1; i >= 0; i-- {
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
		if err := p.closers[i](ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s shutdown: %w", p.Name, err))
		}
		cancel()
	}
	p.closers = nil
	if p.logOut != nil {
		p.logOut.Flush() // the lines of the shutdown too
	}
	return errors.Join(errs...)
}

// Runtime is a started service: its Process, and the app that serves its routes.
type Runtime struct {
	*Process
	// App serves the service's routes; every route but /healthz and /readyz requires a valid
	// gateway identity.
	App *fiber.App

	checks []health.Check
}

// Option changes how Start builds the runtime.
type Option func(*fiberx.Config)

// WithStreamedBodies makes the HTTP server stream request bodies and hands the requests
// stream selects their body unread (file uploads; see fiberx.Config.StreamBody). Every other
// request's body is read whole under the usual limit, as without the option.
func WithStreamedBodies(stream func(*fiber.Ctx) bool) Option {
	return func(c *fiberx.Config) { c.StreamBody = stream }
}

// WithHostedPages declares the path prefixes of the service's hosted pages ("/verify/"): they
// take only the gateway's hosted-page identity, and every other route refuses it
// (fiberx.Config.HostedPages).
func WithHostedPages(prefixes ...string) Option {
	return func(c *fiberx.Config) { c.HostedPages = append(c.HostedPages, prefixes...) }
}

// Start starts a service from the shared configuration: its Process, and an app that serves
// on HTTP_ADDR once Serve is called. On error nothing is left open.
func Start(ctx context.Context, name string, cfg config.Base, stdout io.Writer, opts ...Option) (*Runtime, error) {
	signer, err := identity.NewSigner(cfg.InternalAuthSecret, nil)
	if err != nil {
		return nil, err
	}
	p, err := Open(ctx, name, cfg, stdout)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{Process: p}
	rt.AddCheck("mongodb", p.PingStore)
	appCfg := fiberx.Config{Service: name, Logger: p.Log, Signer: signer,
		TracerProvider: p.Tel.TracerProvider, Propagator: p.Tel.Propagator, Sampler: p.Tel.Sampler,
		MeterProvider: p.Tel.MeterProvider, Listener: "http"}
	for _, o := range opts {
		o(&appCfg)
	}
	rt.App = fiberx.New(appCfg)
	return rt, nil
}

// AddCheck adds a dependency to /readyz: the service is not ready without it.
func (rt *Runtime) AddCheck(name string, fn func(context.Context) error) {
	rt.checks = append(rt.checks, health.Check{Name: name, Fn: fn})
}

// AddDegradingCheck adds a dependency to /readyz that the service serves without, less well
// (health.Check.Degrades): its failure is reported, and the service stays ready.
func (rt *Runtime) AddDegradingCheck(name string, fn func(context.Context) error) {
	rt.checks = append(rt.checks, health.Check{Name: name, Fn: fn, Degrades: true})
}

// Serve registers the health endpoints, and serves the service on HTTP_ADDR and its metrics on
// METRICS_ADDR until ctx ends (Process.Serve).
func (rt *Runtime) Serve(ctx context.Context) error {
	health.Health(rt.App, rt.Log, rt.checks...)
	rt.Listen("http", rt.cfg.HTTPAddr, rt.App)
	return rt.Process.Serve(ctx)
}

// Indexed is an adapter that declares the indexes its queries rely on.
type Indexed interface {
	EnsureIndexes(ctx context.Context) error
}

// EnsureIndexes declares every adapter's indexes, in order, before the service serves: a
// run() calls it once with all of them.
func EnsureIndexes(ctx context.Context, adapters ...Indexed) error {
	for _, a := range adapters {
		if err := a.EnsureIndexes(ctx); err != nil {
			return err
		}
	}
	return nil
}
