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
	"go.opentelemetry.io/otel/trace"

	"rentalplatform/api"
	keystore "rentalplatform/gateway/internal/adapters/mongo"
	"rentalplatform/gateway/internal/adapters/otelmetric"
	redisadapter "rentalplatform/gateway/internal/adapters/redis"
	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	httpport "rentalplatform/gateway/internal/ports/http"
	"rentalplatform/libs/health"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/service"
)

// startupTimeout bounds the work before listening (index creation), so a gateway pointed at
// an unreachable MongoDB fails with a message instead of hanging.
const startupTimeout = 30 * time.Second

// run is the composition root: it reads the configuration, starts the process through the
// service kit (logger, telemetry, key store database), builds the gateway, and serves the
// public, admin and metrics listeners until ctx ends, then shuts everything down.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	signer, err := identity.NewSigner(cfg.InternalAuthSecret, nil)
	if err != nil {
		return err
	}
	services, err := newServices(cfg)
	if err != nil {
		return err
	}
	p, err := service.Open(ctx, "gateway", cfg.Base, stdout)
	if err != nil {
		return err
	}
	fail := func(err error) error { return errors.Join(err, p.Close()) }
	startCtx, cancelStart := context.WithTimeout(ctx, startupTimeout)
	keys, err := keystore.NewKeys(startCtx, p.Store)
	cancelStart()
	if err != nil {
		return fail(fmt.Errorf("key store: %w", err))
	}
	rdb, err := connectRedis(cfg.RedisURL, p.Tel.TracerProvider)
	if err != nil {
		return fail(err)
	}
	p.OnClose(func(context.Context) error { return rdb.Close() })

	idgen := ids.NewGenerator(nil)
	monitor, err := otelmetric.NewLimiter(p.Tel.MeterProvider)
	if err != nil {
		return fail(err)
	}
	svc := newApp(cfg, keys, rdb, idgen, monitor, p.Log)
	// last_used is written in the background, and flushed at shutdown once the listeners
	// stopped (the requests they drained are counted too).
	p.Go(func(ctx context.Context) { _ = svc.Run(ctx) })

	checks := readiness(p, rdb, services)
	tel := p.Tel
	// Both API listeners count each connection's bytes since the last line end, so a request
	// line too long for the read buffer is told from headers too large (414, not 431).
	wrap := service.WrapListener(httpport.WrapListener)
	p.Listen("public", cfg.HTTPAddr, httpport.NewPublic(httpport.PublicConfig{
		Logger: p.Log, Keys: svc, Limits: svc, Idempotency: svc, Signer: signer, Services: services,
		BodyLimit: cfg.BodyLimit, UploadBodyLimit: cfg.UploadBodyLimit, IDs: idgen,
		TracerProvider: tel.TracerProvider, Propagator: tel.Propagator, Sampler: tel.Sampler, MeterProvider: tel.MeterProvider,
		Checks: checks, HostedLimits: svc,
		Documents: []httpport.Document{
			{Path: "/v1/openapi.json", ContentType: fiber.MIMEApplicationJSONCharsetUTF8, Body: api.PublicJSON()},
			{Path: "/docs", ContentType: fiber.MIMETextHTMLCharsetUTF8, Body: api.Reference()},
		},
	}), wrap)
	p.Listen("admin", cfg.AdminAddr, httpport.NewAdmin(httpport.AdminConfig{
		Logger: p.Log, Keys: svc, Token: cfg.AdminToken, AuthLimit: svc.AdminAuth(), IDs: idgen,
		TracerProvider: tel.TracerProvider, Propagator: tel.Propagator, Sampler: tel.Sampler, MeterProvider: tel.MeterProvider,
		Documents: []httpport.Document{
			{Path: "/admin/openapi.json", ContentType: fiber.MIMEApplicationJSONCharsetUTF8, Body: api.AdminJSON()},
		},
	}), wrap)
	return p.Serve(ctx)
}

// connectRedis opens the client of the rate-limit buckets and idempotency records. Redis sits
// on the request path, so one that hangs must fail fast (short timeouts unless REDIS_URL sets
// its own): rate limits then follow GATEWAY_RATE_LIMIT_UNAVAILABLE_READ/_WRITE (open by
// default), idempotent requests fail closed (see docs/architecture.md).
func connectRedis(url string, tp trace.TracerProvider) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = time.Second
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = time.Second
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = time.Second
	}
	opts.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opts)
	// Without the caller's file and line on every span: runtime.Caller per Redis command was
	// the largest single cost of an idempotent request.
	if err := redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(tp), redisotel.WithCallerEnabled(false)); err != nil {
		return nil, errors.Join(fmt.Errorf("redis tracing: %w", err), rdb.Close())
	}
	return rdb, nil
}

// newApp is the gateway's use cases: keys (cached), rate limits and idempotency on Redis.
func newApp(cfg Config, keys *keystore.Keys, rdb *redis.Client, idgen *ids.Generator, monitor app.LimiterMonitor,
	log *slog.Logger) *app.Service {
	return app.New(keys, log, app.Options{
		IDs:      idgen,
		CacheTTL: cfg.KeyCacheTTL,
		Limiter:  redisadapter.NewLimiter(rdb),
		Monitor:  monitor,
		Limits: app.Limits{
			LivePerSecond: cfg.RateLimitLive, TestPerSecond: cfg.RateLimitTest,
			AuthFailuresPerMinute: cfg.AuthFailureLimit, HostedPerMinute: cfg.HostedRateLimit, Timeout: cfg.RateLimitTimeout,
			UnavailableRead: cfg.RateLimitUnavailableRead, UnavailableWrite: cfg.RateLimitUnavailableWrite,
		},
		Idempotency:        redisadapter.NewIdempotency(rdb, cfg.IdempotencyTTL, nil),
		IdempotencyLockTTL: cfg.IdempotencyLockTTL,
	})
}

// readiness is what /readyz checks. Only the key store makes the gateway unready. Without
// Redis it serves (limits per their unavailable policy, requests with an Idempotency-Key get
// 503), and a service
// that is down costs only its own routes (502): both are reported, as "degraded".
func readiness(p *service.Process, rdb *redis.Client, services httpport.Services) []health.Check {
	checks := []health.Check{
		terseCheck(p.Log, "mongodb", false, p.PingStore),
		terseCheck(p.Log, "redis", true, func(ctx context.Context) error { return rdb.Ping(ctx).Err() }),
	}
	for _, u := range services.All() {
		checks = append(checks, terseCheck(p.Log, u.Name(), true, u.Check))
	}
	return checks
}

// terseCheck keeps internal addresses out of /readyz, which is on the public listener: the
// answer says only that a dependency is unavailable, the log says why.
func terseCheck(log *slog.Logger, name string, degrades bool, fn func(context.Context) error) health.Check {
	return health.Check{Name: name, Degrades: degrades, Fn: func(ctx context.Context) error {
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
