package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"rentalplatform/api"
	keystore "rentalplatform/gateway/internal/adapters/mongo"
	redisadapter "rentalplatform/gateway/internal/adapters/redis"
	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	httpport "rentalplatform/gateway/internal/ports/http"
	"rentalplatform/libs/config"
	"rentalplatform/libs/docstore"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/mongox"
	"rentalplatform/libs/telemetry"
)

// startupTimeout bounds the work before listening (index creation), so a gateway pointed at
// an unreachable MongoDB fails with a message instead of hanging.
const startupTimeout = 30 * time.Second

// run is the composition root: it reads the configuration, builds the gateway, serves the
// public, admin and metrics listeners until ctx ends, then shuts everything down.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) (err error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("gateway configuration: %w", err)
	}
	logOut := config.NewLogWriter(stdout)
	defer logOut.Flush() // last: after every line of the shutdown
	log := config.Logger(logOut, "gateway", cfg.LogLevel)

	// Cleanups run after the listeners stopped, with their own budget: ctx is over by then.
	cleanup := func(f func(context.Context) error, what string) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		if cerr := f(cctx); cerr != nil {
			log.Error("shutdown step failed", "step", what, "error", cerr.Error())
		}
	}

	tc := cfg.Telemetry
	if tc.ServiceName == "" {
		tc.ServiceName = "gateway"
	}
	tel, err := telemetry.Setup(ctx, tc)
	if err != nil {
		return fmt.Errorf("gateway telemetry: %w", err)
	}
	defer cleanup(tel.Shutdown, "telemetry")

	mongoClient, db, err := mongox.Connect(mongox.Config{
		URI: cfg.MongoURI, Database: cfg.MongoDatabase, AppName: "gateway", TracerProvider: tel.TracerProvider,
	})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	defer cleanup(mongoClient.Disconnect, "mongo disconnect")
	startCtx, cancelStart := context.WithTimeout(ctx, startupTimeout)
	store, err := docstore.Open(startCtx, db)
	var keys *keystore.Keys
	if err == nil {
		keys, err = keystore.NewKeys(startCtx, store)
	}
	cancelStart()
	if err != nil {
		return fmt.Errorf("gateway key store: %w", err)
	}

	// Redis holds rate-limit buckets and idempotency records. It sits on the request path, so
	// a Redis that hangs must fail fast (short timeouts unless REDIS_URL sets its own): rate
	// limits then fail open, idempotent requests closed (see docs/architecture.md).
	redisOpts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("gateway: REDIS_URL: %w", err)
	}
	if redisOpts.DialTimeout == 0 {
		redisOpts.DialTimeout = time.Second
	}
	if redisOpts.ReadTimeout == 0 {
		redisOpts.ReadTimeout = time.Second
	}
	if redisOpts.WriteTimeout == 0 {
		redisOpts.WriteTimeout = time.Second
	}
	redisOpts.ContextTimeoutEnabled = true
	rdb := redis.NewClient(redisOpts)
	defer cleanup(func(context.Context) error { return rdb.Close() }, "redis close")
	// Without the caller's file and line on every span: runtime.Caller per Redis command was
	// the largest single cost of an idempotent request.
	if err := redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(tel.TracerProvider),
		redisotel.WithCallerEnabled(false)); err != nil {
		return fmt.Errorf("gateway: redis tracing: %w", err)
	}

	signer, err := identity.NewSigner(cfg.InternalAuthSecret, nil)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	services, err := newServices(cfg)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}

	idgen := ids.NewGenerator(nil)
	svc := app.New(keys, log, app.Options{
		IDs:      idgen,
		CacheTTL: cfg.KeyCacheTTL,
		Limiter:  redisadapter.NewLimiter(rdb),
		Limits: app.Limits{
			LivePerSecond: cfg.RateLimitLive, TestPerSecond: cfg.RateLimitTest,
			AuthFailuresPerMinute: cfg.AuthFailureLimit, Timeout: cfg.RateLimitTimeout,
		},
		Idempotency:        redisadapter.NewIdempotency(rdb, cfg.IdempotencyTTL, nil),
		IdempotencyLockTTL: cfg.IdempotencyLockTTL,
	})

	// Only the key store makes the gateway unready. Without Redis it serves (limits fail open,
	// requests with an Idempotency-Key get 503), and a service that is down costs only its own
	// routes (502): both are reported, as "degraded".
	checks := []fiberx.Check{
		terseCheck(log, "mongodb", false, func(ctx context.Context) error { return mongox.Ping(ctx, db) }),
		terseCheck(log, "redis", true, func(ctx context.Context) error { return rdb.Ping(ctx).Err() }),
	}
	for _, u := range services.All() {
		checks = append(checks, terseCheck(log, u.Name(), true, u.Check))
	}
	public := httpport.NewPublic(httpport.PublicConfig{
		Logger: log, Keys: svc, Limits: svc, Idempotency: svc, Signer: signer, Services: services,
		BodyLimit: cfg.BodyLimit, UploadBodyLimit: cfg.UploadBodyLimit, IDs: idgen,
		TracerProvider: tel.TracerProvider, Propagator: tel.Propagator, Sampler: tel.Sampler, MeterProvider: tel.MeterProvider,
		Checks: checks,
		Documents: []httpport.Document{
			{Path: "/v1/openapi.json", ContentType: fiber.MIMEApplicationJSONCharsetUTF8, Body: api.PublicJSON()},
			{Path: "/docs", ContentType: fiber.MIMETextHTMLCharsetUTF8, Body: api.Reference()},
		},
	})
	admin := httpport.NewAdmin(httpport.AdminConfig{
		Logger: log, Keys: svc, Token: cfg.AdminToken, AuthLimit: svc.AdminAuth(), IDs: idgen,
		TracerProvider: tel.TracerProvider, Propagator: tel.Propagator, Sampler: tel.Sampler, MeterProvider: tel.MeterProvider,
		Documents: []httpport.Document{
			{Path: "/admin/openapi.json", ContentType: fiber.MIMEApplicationJSONCharsetUTF8, Body: api.AdminJSON()},
		},
	})

	// One failing listener stops the other and the background writer.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return fiberx.Serve(gctx, public, cfg.PublicAddr, "public", cfg.ShutdownTimeout, log)
	})
	g.Go(func() error {
		return fiberx.Serve(gctx, admin, cfg.AdminAddr, "admin", cfg.ShutdownTimeout, log)
	})
	g.Go(func() error {
		return fiberx.Serve(gctx, fiberx.MetricsApp(tel.Metrics), cfg.MetricsAddr, "metrics", cfg.ShutdownTimeout, log)
	})
	g.Go(func() error { return svc.Run(gctx) })
	if err := g.Wait(); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	log.Info("stopped")
	return nil
}

// terseCheck keeps internal addresses out of /readyz, which is on the public listener: the
// answer says only that a dependency is unavailable, the log says why.
func terseCheck(log *slog.Logger, name string, degrades bool, fn func(context.Context) error) fiberx.Check {
	return fiberx.Check{Name: name, Degrades: degrades, Fn: func(ctx context.Context) error {
		if err := fn(ctx); err != nil {
			log.WarnContext(ctx, "dependency not ready", "dependency", name, "error", err.Error())
			return errors.New("unavailable")
		}
		return nil
	}}
}

func newServices(cfg Config) (httpport.Services, error) {
	var s httpport.Services
	for _, u := range []struct {
		dst  **upstream.Upstream
		name string
		url  string
	}{
		{&s.Verification, "verification", cfg.Upstreams.Verification},
		{&s.Collections, "collections", cfg.Upstreams.Collections},
		{&s.Payments, "payments", cfg.Upstreams.Payments},
		{&s.Webhooks, "webhooks", cfg.Upstreams.Webhooks},
	} {
		up, err := upstream.New(upstream.Config{Name: u.name, URL: u.url, Timeout: cfg.UpstreamTimeout})
		if err != nil {
			return httpport.Services{}, err
		}
		*u.dst = up
	}
	return s, nil
}
