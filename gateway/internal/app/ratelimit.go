package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/fifo"
)

// RateLimiter is a rate limiter shared by every gateway replica (GCRA in Redis).
type RateLimiter interface {
	// Take takes up to n requests' worth from bucket, which refills at rate requests per
	// period and holds at most burst, and says how many it got (Granted, 0 to n).
	Take(ctx context.Context, bucket string, rate, burst int, period time.Duration, n int) (RateDecision, error)
}

// RateDecision is the limiter's answer.
type RateDecision struct {
	// Allowed is whether this request may go ahead.
	Allowed bool
	// Granted is how many requests' worth the limiter handed out (RateLimiter.Take).
	Granted int
	// Limit is the bucket's size: how many requests may be made at once.
	Limit int
	// Remaining is how many more requests may be made now.
	Remaining int
	// RetryAfter is how long until the next request is allowed (when refused).
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again.
	ResetAfter time.Duration
}

// Limits are the default rate limits. 0 turns a limit off.
type Limits struct {
	// LivePerSecond and TestPerSecond are each account's requests per second in each mode;
	// the burst is one second's worth.
	LivePerSecond int
	TestPerSecond int
	// AuthFailuresPerMinute is how many failed authentications one client address may
	// cause per minute (all at once, at most) before it is blocked: bad API keys on the
	// public listener, and separately wrong tokens on the admin listener.
	AuthFailuresPerMinute int
}

// rateTimeout bounds one limiter call: a slow Redis must not hold every request.
const rateTimeout = 250 * time.Millisecond

// Leases. Each replica takes a small batch of a bucket's requests from Redis at once and
// hands them out itself for a short while, so that a busy account costs Redis (and the
// request path) one script call per batch, not one per request. A batch is a fiftieth of a
// second's worth, at most 100 and at least 1: at the default limits (25/s test, 100/s live)
// it is 1 and 2, so the limit is exact to within 2 requests per replica; at a limit of 5,000/s
// it is 100. Requests of a batch not handed out within leaseWindow are forfeited (the limit
// errs on the strict side).
const (
	leaseDivisor = 50
	maxLease     = 100
	leaseWindow  = 20 * time.Millisecond
	// limiterPause is how long rate limits stay off after the limiter failed, so an outage
	// costs one failed call a second instead of one per request.
	limiterPause   = time.Second
	leaseTableSize = 10_000
)

// RateLimit takes one request of key from its bucket: the key's own when it has a rate limit
// of its own, else its account's in its mode. ok is false when no limit applies: the limit
// is off, or the limiter failed, in which case the request is let through (fail open) and a
// warning logged, because refusing every request while Redis is down would turn a Redis
// outage into an outage of the whole API.
func (s *Service) RateLimit(ctx context.Context, k domain.Key) (d RateDecision, ok bool) {
	if s.limiter == nil {
		return RateDecision{}, false
	}
	var bucket string
	var rate int
	if own, has := k.RateLimit(); has {
		bucket, rate = "key:"+k.ID(), own.PerSecond
	} else {
		bucket, rate = "acct:"+k.Account()+":"+modeName(k.Livemode()), s.limits.TestPerSecond
		if k.Livemode() {
			rate = s.limits.LivePerSecond
		}
	}
	if rate <= 0 {
		return RateDecision{}, false
	}
	now := s.now()
	if s.leases.paused(now) {
		return RateDecision{}, false
	}
	l := s.leases.get(bucket, rate, now)
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.deniedUntil) {
		return RateDecision{Limit: rate, RetryAfter: l.deniedUntil.Sub(now), ResetAfter: l.resetAt.Sub(now)}, true
	}
	if l.tokens == 0 || !now.Before(l.until) {
		batch := min(max(rate/leaseDivisor, 1), maxLease)
		cctx, cancel := context.WithTimeout(ctx, rateTimeout)
		got, err := s.limiter.Take(cctx, bucket, rate, rate, time.Second, batch)
		cancel()
		if err != nil {
			s.leases.pause(now.Add(limiterPause))
			s.redisLog.warn(ctx, "rate limit not enforced: the limiter is unavailable (failing open)", err)
			return RateDecision{}, false
		}
		l.resetAt = now.Add(got.ResetAfter)
		if got.Granted == 0 {
			l.tokens = 0
			l.deniedUntil = now.Add(got.RetryAfter)
			return RateDecision{Limit: rate, RetryAfter: got.RetryAfter, ResetAfter: got.ResetAfter}, true
		}
		l.tokens, l.remaining, l.until = got.Granted, got.Remaining, now.Add(leaseWindow)
	}
	l.tokens--
	return RateDecision{Allowed: true, Limit: rate, Remaining: l.remaining + l.tokens, ResetAfter: max(l.resetAt.Sub(now), 0)}, true
}

// leaseTable holds one lease per bucket in use on this replica.
type leaseTable struct {
	mu          sync.Mutex
	m           map[string]*lease
	pausedUntil time.Time
}

// lease is a batch of one bucket's requests this replica may hand out.
type lease struct {
	mu          sync.Mutex
	rate        int
	tokens      int       // requests left in the batch
	until       time.Time // the batch is forfeited after this
	remaining   int       // the bucket's remaining when the batch was taken
	resetAt     time.Time // when the bucket is full again
	deniedUntil time.Time // refused until then without asking Redis
}

func newLeaseTable() *leaseTable { return &leaseTable{m: map[string]*lease{}} }

func (t *leaseTable) get(bucket string, rate int, now time.Time) *lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.m[bucket]
	if ok && l.rate == rate {
		return l
	}
	if len(t.m) >= leaseTableSize {
		// Drop the idle ones; a dropped lease only costs one more Redis call.
		for b, x := range t.m {
			x.mu.Lock()
			idle := !now.Before(x.until) && !now.Before(x.deniedUntil)
			x.mu.Unlock()
			if idle {
				delete(t.m, b)
			}
		}
	}
	// A new lease, also when the rate changed (a per-key limit was changed).
	l = &lease{rate: rate}
	t.m[bucket] = l
	return l
}

func (t *leaseTable) paused(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return now.Before(t.pausedUntil)
}

func (t *leaseTable) pause(until time.Time) {
	t.mu.Lock()
	t.pausedUntil = until
	t.mu.Unlock()
}

// Blocked reports whether the client address ip is blocked for failing authentication too
// often on the public listener, and for how much longer (see AuthGuard.Blocked).
func (s *Service) Blocked(ip string) (time.Duration, bool) {
	return s.publicAuth.Blocked(ip)
}

// AuthFailed counts a failed authentication from ip on the public listener (see
// AuthGuard.AuthFailed).
func (s *Service) AuthFailed(ctx context.Context, ip string) (time.Duration, bool) {
	return s.publicAuth.AuthFailed(ctx, ip)
}

// AdminAuth returns the failed-authentication limit of the admin listener (wrong admin tokens).
func (s *Service) AdminAuth() *AuthGuard { return s.adminAuth }

// AuthGuard limits the failed authentications of one listener per client address, to
// Limits.AuthFailuresPerMinute. Each listener counts in buckets of its own, so a client that
// keeps sending bad API keys is not also locked out of the admin API (which on a shared host
// may well be the same address), nor the other way round.
type AuthGuard struct {
	s       *Service
	bucket  string // limiter bucket prefix; the address follows
	what    string // for the log
	blocked *blockList
}

func newAuthGuard(s *Service, bucket, what string) *AuthGuard {
	return &AuthGuard{s: s, bucket: bucket, what: what, blocked: newBlockList(blockListSize)}
}

// Blocked reports whether the client address ip is blocked for failing authentication too
// often, and for how much longer. It asks no one: a replica learns of a block when one of the
// address's failures is refused (AuthFailed), so a blocked address costs no Redis call and no
// key lookup.
func (g *AuthGuard) Blocked(ip string) (time.Duration, bool) {
	return g.blocked.blocked(ip, g.s.now())
}

// AuthFailed counts a failed authentication from ip. When the address is over its limit it
// is blocked until it is under again, and AuthFailed returns how long that is. A limiter
// failure lets the failure through uncounted (fail open, logged).
func (g *AuthGuard) AuthFailed(ctx context.Context, ip string) (time.Duration, bool) {
	s := g.s
	n := s.limits.AuthFailuresPerMinute
	if s.limiter == nil || n <= 0 {
		return 0, false
	}
	if s.leases.paused(s.now()) {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, rateTimeout)
	defer cancel()
	d, err := s.limiter.Take(ctx, g.bucket+ip, n, n, time.Minute, 1)
	if err != nil {
		s.leases.pause(s.now().Add(limiterPause))
		s.redisLog.warn(ctx, "failed-authentication limit ("+g.what+") not enforced: the limiter is unavailable (failing open)", err)
		return 0, false
	}
	if d.Granted > 0 {
		return 0, false
	}
	now := s.now()
	g.blocked.block(ip, now.Add(d.RetryAfter))
	return d.RetryAfter, true
}

func modeName(live bool) string {
	if live {
		return "live"
	}
	return "test"
}

// blockListSize bounds the addresses one replica remembers as blocked; past it the oldest
// block is forgotten first (that address then costs one more refused Redis call before it is
// blocked here again).
const blockListSize = 10_000

// blockList remembers blocked client addresses until their block ends.
type blockList struct {
	until *fifo.Map[string, time.Time]
}

func newBlockList(size int) *blockList {
	return &blockList{until: fifo.New[string, time.Time](size)}
}

func (b *blockList) blocked(ip string, now time.Time) (time.Duration, bool) {
	t, ok := b.until.Get(ip)
	if !ok {
		return 0, false
	}
	if !now.Before(t) {
		b.until.Delete(ip)
		return 0, false
	}
	return t.Sub(now), true
}

func (b *blockList) block(ip string, until time.Time) { b.until.Put(ip, until) }

// throttledLog writes one warning per interval about a failing dependency, so an outage
// under load is reported without flooding the log.
type throttledLog struct {
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	last     time.Time
	suppress int
}

func (t *throttledLog) warn(ctx context.Context, msg string, err error) {
	t.mu.Lock()
	now := time.Now()
	if now.Sub(t.last) < t.every {
		t.suppress++
		t.mu.Unlock()
		return
	}
	n := t.suppress
	t.last, t.suppress = now, 0
	t.mu.Unlock()
	t.log.WarnContext(ctx, msg, "error", err.Error(), "suppressed_since_last", n)
}
