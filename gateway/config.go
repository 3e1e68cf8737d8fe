package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/config"
)

// minAdminTokenLen keeps the admin token out of guessing range.
const minAdminTokenLen = 16

// Config is the gateway's configuration, read once from the environment. Its Base is the
// settings every process shares, with the gateway's names and defaults: HTTPAddr is the public
// listener (GATEWAY_ADDR), and METRICS_ADDR defaults beside the admin listener.
type Config struct {
	config.Base
	AdminAddr       string // ADMIN_ADDR
	AdminToken      string // ADMIN_TOKEN
	RedisURL        string
	Upstreams       UpstreamURLs
	UpstreamTimeout time.Duration
	BodyLimit       int
	UploadBodyLimit int

	// Requests per second of each account in each mode (0: unlimited), and failed
	// authentications per minute of one client address (0: unlimited).
	RateLimitLive    int // GATEWAY_RATE_LIMIT_LIVE
	RateLimitTest    int // GATEWAY_RATE_LIMIT_TEST
	AuthFailureLimit int // GATEWAY_AUTH_FAILURE_LIMIT
	// HostedRateLimit is the requests per minute of one client address to the hosted pages,
	// which take no key (0: unlimited).
	HostedRateLimit int // GATEWAY_HOSTED_RATE_LIMIT
	// RateLimitTimeout bounds one rate-limit call to Redis; a slower one counts as a failure.
	RateLimitTimeout time.Duration // GATEWAY_RATE_LIMIT_TIMEOUT
	// What happens to reads (GET, HEAD) and writes whose rate limit cannot be checked: let
	// through (open, the default) or refused with 503 (closed).
	RateLimitUnavailableRead  app.FailMode // GATEWAY_RATE_LIMIT_UNAVAILABLE_READ
	RateLimitUnavailableWrite app.FailMode // GATEWAY_RATE_LIMIT_UNAVAILABLE_WRITE
	// IdempotencyTTL is how long responses are kept for replays; IdempotencyLockTTL how long
	// a request that never finished keeps its key locked.
	IdempotencyTTL     time.Duration // GATEWAY_IDEMPOTENCY_TTL
	IdempotencyLockTTL time.Duration // GATEWAY_IDEMPOTENCY_LOCK_TTL
	// KeyCacheTTL bounds how long another replica keeps accepting a revoked key.
	KeyCacheTTL time.Duration // GATEWAY_KEY_CACHE_TTL
}

// failMode reads an "open" or "closed" variable, open when unset.
func failMode(r *config.Reader, name string) app.FailMode {
	v := r.String(name, app.FailOpen.String())
	m, ok := app.ParseFailMode(v)
	if !ok {
		r.Fail(fmt.Errorf("%s must be open or closed, not %q", name, v))
	}
	return m
}

// maxKeyCacheTTL is the documented bound on how late a revoke may take effect.
const maxKeyCacheTTL = 5 * time.Second

// UpstreamURLs are the base URLs of the services behind the gateway.
type UpstreamURLs struct {
	Verification, Collections, Payments, Webhooks string
}

// defaultPublicAddr is GATEWAY_ADDR when unset; the -healthcheck mode (main.go) asks it too.
const defaultPublicAddr = "127.0.0.1:8080"

func loadConfig(getenv func(string) string) (Config, error) {
	r := config.NewReader(getenv)
	c := Config{
		AdminAddr:  r.String("ADMIN_ADDR", "127.0.0.1:8081"),
		AdminToken: r.Required("ADMIN_TOKEN"),
		RedisURL:   r.String("REDIS_URL", "redis://127.0.0.1:6379/0"),
		Upstreams: UpstreamURLs{
			Verification: r.String("VERIFICATION_URL", "http://127.0.0.1:8091"),
			Collections:  r.String("COLLECTIONS_URL", "http://127.0.0.1:8092"),
			Payments:     r.String("PAYMENTS_URL", "http://127.0.0.1:8093"),
			Webhooks:     r.String("WEBHOOKS_URL", "http://127.0.0.1:8094"),
		},
		UpstreamTimeout: r.PositiveDuration("UPSTREAM_TIMEOUT", 30*time.Second),
		BodyLimit:       r.Bytes("BODY_LIMIT", 1<<20),
		// collections-svc's largest upload: a 25 MiB file and 1 MiB of form around it. The gateway
		// refuses a longer body itself instead of streaming it to the service's 413.
		UploadBodyLimit: r.Bytes("UPLOAD_BODY_LIMIT", 26<<20),

		RateLimitLive:    r.Int("GATEWAY_RATE_LIMIT_LIVE", 100, 0, domain.MaxRateLimit),
		RateLimitTest:    r.Int("GATEWAY_RATE_LIMIT_TEST", 25, 0, domain.MaxRateLimit),
		AuthFailureLimit: r.Int("GATEWAY_AUTH_FAILURE_LIMIT", 60, 0, domain.MaxRateLimit),
		HostedRateLimit:  r.Int("GATEWAY_HOSTED_RATE_LIMIT", 120, 0, domain.MaxRateLimit),
		RateLimitTimeout: r.PositiveDuration("GATEWAY_RATE_LIMIT_TIMEOUT", app.DefaultRateTimeout),
		// Open by default, reads and writes alike: a Redis outage must not become an outage of
		// the API (docs/architecture.md, "Redis down").
		RateLimitUnavailableRead:  failMode(r, "GATEWAY_RATE_LIMIT_UNAVAILABLE_READ"),
		RateLimitUnavailableWrite: failMode(r, "GATEWAY_RATE_LIMIT_UNAVAILABLE_WRITE"),
		IdempotencyTTL:            r.PositiveDuration("GATEWAY_IDEMPOTENCY_TTL", app.DefaultIdempotencyTTL),
		IdempotencyLockTTL:        r.Duration("GATEWAY_IDEMPOTENCY_LOCK_TTL", app.DefaultIdempotencyLockTTL),
		KeyCacheTTL:               r.Duration("GATEWAY_KEY_CACHE_TTL", app.DefaultCacheTTL),
	}
	// Metrics beside the admin listener, never the public one: they must stay internal.
	base, baseErr := config.LoadBase(getenv, config.Defaults{HTTPAddr: defaultPublicAddr, MongoDatabase: "gateway",
		AddrVariable: "GATEWAY_ADDR", MetricsBeside: c.AdminAddr})
	c.Base = base
	errs := []error{baseErr, r.Err()}
	if c.AdminToken != "" && len(c.AdminToken) < minAdminTokenLen {
		errs = append(errs, fmt.Errorf("ADMIN_TOKEN must be at least %d characters", minAdminTokenLen))
	}
	// A lock that could expire while its request still waits for the service would let a
	// retry run the request a second time.
	if c.IdempotencyLockTTL <= c.UpstreamTimeout {
		errs = append(errs, fmt.Errorf("GATEWAY_IDEMPOTENCY_LOCK_TTL (%s) must be longer than UPSTREAM_TIMEOUT (%s)",
			c.IdempotencyLockTTL, c.UpstreamTimeout))
	}
	if c.KeyCacheTTL <= 0 || c.KeyCacheTTL > maxKeyCacheTTL {
		errs = append(errs, fmt.Errorf("GATEWAY_KEY_CACHE_TTL must be more than 0 and at most %s (the revoke bound)", maxKeyCacheTTL))
	}
	if _, err := redis.ParseURL(c.RedisURL); err != nil {
		errs = append(errs, fmt.Errorf("REDIS_URL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c, nil
}
