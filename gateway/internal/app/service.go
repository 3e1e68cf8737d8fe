// Package app holds the gateway's use cases: making, listing, rolling, changing and revoking
// API keys; authenticating a request's key; rate limits per account and mode (and per client
// address for failed authentications and for the hosted pages); and idempotent replays of POST
// requests.
package app

import (
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/ids"
)

// Defaults of Options.
const (
	// DefaultCacheTTL bounds how long a replica that did not serve a revoke keeps accepting
	// the revoked key.
	DefaultCacheTTL = 2 * time.Second
	// DefaultCacheSize bounds each of the positive and negative caches.
	DefaultCacheSize = 10_000
	// DefaultLastUsedInterval is how often at most a key's last_used is written.
	DefaultLastUsedInterval = time.Minute
	// DefaultIdempotencyTTL is how long a response is kept for replays.
	DefaultIdempotencyTTL = 24 * time.Hour
	// DefaultIdempotencyLockTTL bounds how long a crashed request keeps its key locked.
	DefaultIdempotencyLockTTL = 2 * time.Minute
	// lookupTimeout bounds one key lookup in the store. It runs detached from the request
	// that started it, because other requests may be waiting on the same lookup.
	lookupTimeout = 5 * time.Second
)

// Options tune a Service; zero values take the defaults.
type Options struct {
	CacheTTL         time.Duration
	CacheSize        int
	LastUsedInterval time.Duration
	// Limiter enforces rate limits; nil turns every limit off.
	Limiter RateLimiter
	// Limits are the default rate limits of each mode and of failed authentications.
	Limits Limits
	// Monitor counts requests whose rate limit could not be checked; nil counts nothing.
	Monitor LimiterMonitor
	// Idempotency stores idempotency keys and responses; nil answers every request that
	// carries a key with ErrIdempotencyUnavailable.
	Idempotency IdempotencyStore
	// IdempotencyLockTTL bounds how long an idempotency key stays locked by a request that
	// never finished (a crashed gateway) [DefaultIdempotencyLockTTL].
	IdempotencyLockTTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// IDs makes key ids (a new generator when nil).
	IDs *ids.Generator
}

// Service runs the use cases. It is safe for concurrent use.
type Service struct {
	keys    domain.KeyRepository
	log     *slog.Logger
	now     func() time.Time
	ids     *ids.Generator
	cache   *keyCache
	usage   *usageRecorder
	lookups singleflight.Group

	limiter  RateLimiter
	limits   Limits
	monitor  LimiterMonitor
	leases   *leaseTable
	refills  sync.WaitGroup // batches fetched ahead, in the background
	redisLog *throttledLog
	// Failed authentications: API keys on the public listener, the token on the admin one.
	publicAuth *AuthGuard
	adminAuth  *AuthGuard

	idem        IdempotencyStore
	idemLockTTL time.Duration
}

// New returns a Service storing keys in keys. Call Run to have last_used recorded.
func New(keys domain.KeyRepository, log *slog.Logger, opt Options) *Service {
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultCacheTTL
	}
	if opt.CacheSize <= 0 {
		opt.CacheSize = DefaultCacheSize
	}
	if opt.LastUsedInterval <= 0 {
		opt.LastUsedInterval = DefaultLastUsedInterval
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.IDs == nil {
		opt.IDs = ids.NewGenerator(opt.Now)
	}
	if opt.IdempotencyLockTTL <= 0 {
		opt.IdempotencyLockTTL = DefaultIdempotencyLockTTL
	}
	s := &Service{
		keys:        keys,
		log:         log,
		now:         opt.Now,
		ids:         opt.IDs,
		cache:       newKeyCache(opt.CacheTTL, opt.CacheSize),
		usage:       newUsageRecorder(keys, log, opt.LastUsedInterval),
		limiter:     opt.Limiter,
		limits:      opt.Limits,
		monitor:     opt.Monitor,
		leases:      newLeaseTable(),
		redisLog:    &throttledLog{log: log, every: 10 * time.Second},
		idem:        opt.Idempotency,
		idemLockTTL: opt.IdempotencyLockTTL,
	}
	s.publicAuth = newAuthGuard(s, "authfail:", "API keys")
	s.adminAuth = newAuthGuard(s, "adminauthfail:", "admin token")
	return s
}
