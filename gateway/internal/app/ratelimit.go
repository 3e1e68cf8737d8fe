package app

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
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
	// Unavailable is set, with Allowed false, when the limiter could not be asked and the
	// policy for the request's access is FailClosed: the request is refused (503), not
	// limited (429), and has no RateLimit-* figures.
	Unavailable bool
}

// FailMode is what happens to a request whose rate limit cannot be checked (the limiter
// failed or outlasted Limits.Timeout, or did within limiterPause).
type FailMode int

const (
	// FailOpen lets the request through unlimited: a limiter outage is not an API outage.
	FailOpen FailMode = iota
	// FailClosed refuses the request (RateDecision.Unavailable): no request goes unlimited.
	FailClosed
)

// String returns the mode as GATEWAY_RATE_LIMIT_UNAVAILABLE_* spells it.
func (m FailMode) String() string {
	if m == FailClosed {
		return "closed"
	}
	return "open"
}

// ParseFailMode reads "open" or "closed".
func ParseFailMode(s string) (FailMode, bool) {
	switch s {
	case "open":
		return FailOpen, true
	case "closed":
		return FailClosed, true
	}
	return FailOpen, false
}

// LimiterMonitor is told of every request whose rate limit could not be checked, with its
// access (read: GET and HEAD; write: the rest) and the mode applied, so an outage shows on a
// dashboard and not only in the (throttled) log.
type LimiterMonitor interface {
	LimiterUnavailable(ctx context.Context, access domain.Access, mode FailMode)
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
	// HostedPerMinute is how many requests one client address may make per minute (all at
	// once, at most) to the hosted pages, which take no API key (HostedRateLimit).
	HostedPerMinute int
	// Timeout bounds one limiter call (DefaultRateTimeout when 0): a slow Redis must not hold
	// every request. A call that outlasts it fails open: the request is let through and
	// limits pause for limiterPause.
	Timeout time.Duration
	// UnavailableRead and UnavailableWrite are what happens to reads (GET, HEAD) and writes
	// (every other method) whose rate limit cannot be checked. Both default to FailOpen.
	UnavailableRead, UnavailableWrite FailMode
}

// failMode is the mode of requests of access when the limiter is unavailable.
func (l Limits) failMode(access domain.Access) FailMode {
	if access == domain.AccessRead {
		return l.UnavailableRead
	}
	return l.UnavailableWrite
}

// DefaultRateTimeout is Limits.Timeout's default (GATEWAY_RATE_LIMIT_TIMEOUT).
const DefaultRateTimeout = 250 * time.Millisecond

// rateTimeout is the limit on one limiter call.
func (l Limits) rateTimeout() time.Duration {
	if l.Timeout > 0 {
		return l.Timeout
	}
	return DefaultRateTimeout
}

// Leases. Each replica takes a small batch of a bucket's requests from Redis at once and
// hands them out itself for a short while, so that a busy account costs Redis (and the
// request path) one script call per batch, not one per request. A batch is a fiftieth of a
// second's worth, at most 100 and at least 1: at the default limits (25/s test, 100/s live)
// it is 1 and 2; at a limit of 5,000/s it is 100. Requests of a batch not handed out within
// leaseWindow are forfeited (the limit errs on the strict side).
//
// No request waits behind another's Redis call while the lease has requests to hand out: a
// bucket whose last batch ran out within its window is busy, and its next batch is fetched
// in the background once half of the current one is gone. A request that finds the lease
// empty while a call is under way joins that call and is served from what it brings back,
// instead of queueing a call of its own. A refusal is remembered until its Retry-After, so a
// flood over the limit is answered from memory: one Redis call per Retry-After, not one per
// request.
//
// Bound: a replica holds at most one and a half batches of a bucket (the rest of one and the
// next), taken from the bucket in Redis before they are handed out, so the replicas together
// let through at most what the bucket allows plus one and a half batches each: 2 (test) and 3
// (live) requests per replica at the default limits, 150 at 5,000/s. (One batch more, for a
// moment, when a request that waited through maxJoins calls makes its own: a request is
// refused only on Redis's word, never for having waited.)
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
// of its own, else its account's in its mode. access is the request's: AccessRead for GET and
// HEAD, AccessWrite for the rest. ok is false when no limit applies: the limit is off, or the
// limiter is unavailable and the access's mode is FailOpen (the request is let through). When
// it is unavailable and the mode is FailClosed the decision is Unavailable. Either way the
// monitor counts the request and a warning is logged (at most one per 10 s).
func (s *Service) RateLimit(ctx context.Context, k domain.Key, access domain.Access) (d RateDecision, ok bool) {
	if s.limiter == nil {
		return RateDecision{}, false
	}
	var bucket bucketKey
	var rate int
	if own, has := k.RateLimit(); has {
		bucket, rate = bucketKey{own: true, id: k.ID()}, own.PerSecond
	} else {
		bucket, rate = bucketKey{id: k.Account(), live: k.Livemode()}, s.limits.TestPerSecond
		if k.Livemode() {
			rate = s.limits.LivePerSecond
		}
	}
	if rate <= 0 {
		return RateDecision{}, false
	}
	now := s.now()
	if s.leases.paused(now) {
		return s.unavailable(ctx, access)
	}
	l := s.leases.get(bucket, rate, now)
	batch := min(max(rate/leaseDivisor, 1), maxLease)
	l.mu.Lock()
	for waits := 0; ; waits++ {
		if l.tokens > 0 && !now.Before(l.until) {
			l.tokens, l.busy = 0, false // forfeited: the bucket is not that busy
		}
		if l.tokens > 0 {
			d := l.take(now)
			if l.busy && l.call == nil && l.tokens <= batch/2 && !now.Before(l.deniedUntil) {
				// Fetch the next batch before anyone needs it.
				c := l.startCall()
				s.refills.Add(1)
				go func() {
					defer s.refills.Done()
					s.refill(context.WithoutCancel(ctx), l, c, batch, false)
				}()
			}
			l.mu.Unlock()
			return d, true
		}
		if now.Before(l.deniedUntil) {
			d := l.refused(now, l.deniedUntil.Sub(now))
			l.mu.Unlock()
			return d, true
		}
		if c := l.call; c != nil {
			if waits == maxJoins {
				// Calls went by and left nothing for this request (others took their
				// batches, or they were forfeited before it ran again): a call of its own,
				// beside the one under way. Only Redis refuses a request.
				l.mu.Unlock()
				return s.mine(ctx, access, l, nil, batch)
			}
			l.mu.Unlock()
			<-c.done
			if c.failed {
				return s.unavailable(ctx, access)
			}
			now = s.now()
			l.mu.Lock()
			continue
		}
		// A batch used up within its window: the bucket is busy, fetch ahead from now on.
		l.busy = now.Before(l.until)
		c := l.startCall()
		l.mu.Unlock()
		return s.mine(ctx, access, l, c, batch)
	}
}

// mine is refill for the request that makes the call: its decision, or the policy's when the
// limiter failed.
func (s *Service) mine(ctx context.Context, access domain.Access, l *lease, c *leaseCall, n int) (RateDecision, bool) {
	if d, ok := s.refill(ctx, l, c, n, true); ok {
		return d, true
	}
	return s.unavailable(ctx, access)
}

// unavailable is the decision for a request of access whose rate limit cannot be checked: let
// through (FailOpen: ok false) or refused (FailClosed: Unavailable). The request is counted
// and a warning, with the last limiter error, logged at most once per 10 s.
func (s *Service) unavailable(ctx context.Context, access domain.Access) (RateDecision, bool) {
	mode := s.limits.failMode(access)
	if s.monitor != nil {
		s.monitor.LimiterUnavailable(ctx, access, mode)
	}
	s.redisLog.warn(ctx, "rate limit not checked: the limiter is unavailable", s.leases.lastErr(),
		"access", access.String(), "policy", mode.String())
	if mode == FailClosed {
		return RateDecision{Unavailable: true}, true
	}
	return RateDecision{}, false
}

// maxJoins bounds how many limiter calls of other requests a request waits for before it
// makes one of its own.
const maxJoins = 3

// take hands out one request of the lease; l.mu is held.
func (l *lease) take(now time.Time) RateDecision {
	l.tokens--
	return RateDecision{Allowed: true, Limit: l.rate, Remaining: l.remaining + l.tokens, ResetAfter: max(l.resetAt.Sub(now), 0)}
}

// refused is the answer to a request refused for retry; l.mu is held.
func (l *lease) refused(now time.Time, retry time.Duration) RateDecision {
	return RateDecision{Limit: l.rate, RetryAfter: retry, ResetAfter: max(l.resetAt.Sub(now), 0)}
}

// refill takes up to n requests of l's bucket from the limiter into the lease. c is the call
// the lease's waiters wait for (nil: nobody waits for this one). For the request that made the
// call (mine), it returns that request's decision: one of the batch, or the refusal; ok is
// false when the limiter failed (rate limits are then paused, and the caller applies the
// policy: Service.unavailable).
func (s *Service) refill(ctx context.Context, l *lease, c *leaseCall, n int, mine bool) (d RateDecision, ok bool) {
	cctx, cancel := context.WithTimeout(ctx, s.limits.rateTimeout())
	got, err := s.limiter.Take(cctx, l.bucket, l.rate, l.rate, time.Second, n)
	cancel()
	now := s.now()
	l.mu.Lock()
	defer func() {
		if c == nil { // a call beside the lease's (RateLimit, maxJoins)
			l.mu.Unlock()
			return
		}
		l.call = nil
		l.mu.Unlock()
		close(c.done)
	}()
	if err != nil {
		if c != nil {
			c.failed = true
		}
		s.leases.pause(now.Add(limiterPause), err)
		return RateDecision{}, false
	}
	l.resetAt = now.Add(got.ResetAfter)
	if got.Granted == 0 {
		l.deniedUntil = now.Add(got.RetryAfter)
		if l.tokens > 0 && now.Before(l.until) && mine {
			return l.take(now), true // what is left of the last batch is still good
		}
		return l.refused(now, got.RetryAfter), true
	}
	if !now.Before(l.until) {
		l.tokens = 0
	}
	l.tokens += got.Granted
	l.remaining, l.until = got.Remaining, now.Add(leaseWindow)
	if got.Remaining == 0 {
		// The bucket is empty: the next request's worth comes back in one emission interval
		// (GCRA), and a request that finds the lease empty before then is refused here.
		l.deniedUntil = now.Add(time.Second / time.Duration(l.rate))
	}
	if mine {
		return l.take(now), true
	}
	return RateDecision{}, true
}

// bucketKey names a bucket without building its Redis name on every request.
type bucketKey struct {
	own  bool   // a key's own limit: id is the key's id; else id is the account
	id   string // key id or account
	live bool
}

func (b bucketKey) name() string {
	if b.own {
		return "key:" + b.id
	}
	return "acct:" + b.id + ":" + modeName(b.live)
}

// leaseTable holds one lease per bucket in use on this replica. Every request reads it, so
// the lookup of a bucket in use takes only a read lock and the pause is an atomic: one
// process-wide mutex here was taken twice per request.
type leaseTable struct {
	mu          sync.RWMutex
	m           map[bucketKey]*lease
	pausedUntil atomic.Int64 // Unix nanoseconds; 0: never paused
	// err is the limiter's last failure, for the log lines of the requests in its pause.
	err atomic.Pointer[error]
}

// lease is what this replica may hand out of one bucket.
type lease struct {
	bucket string // the limiter's name of the bucket
	rate   int

	mu          sync.Mutex
	tokens      int        // requests left to hand out
	until       time.Time  // they are forfeited after this
	remaining   int        // the bucket's remaining when the last batch was taken
	resetAt     time.Time  // when the bucket is full again
	deniedUntil time.Time  // refused until then without asking Redis
	busy        bool       // batches run out within their window: fetch the next ahead
	call        *leaseCall // the limiter call under way, if any
}

// leaseCall is a limiter call under way; requests that find the lease empty wait for it.
type leaseCall struct {
	done   chan struct{}
	failed bool // set before done is closed
}

// startCall marks a limiter call under way; l.mu is held.
func (l *lease) startCall() *leaseCall {
	l.call = &leaseCall{done: make(chan struct{})}
	return l.call
}

func newLeaseTable() *leaseTable { return &leaseTable{m: map[bucketKey]*lease{}} }

func (t *leaseTable) get(bucket bucketKey, rate int, now time.Time) *lease {
	t.mu.RLock()
	l, ok := t.m[bucket]
	t.mu.RUnlock()
	if ok && l.rate == rate {
		return l
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.m[bucket]; ok && l.rate == rate { // made since the read
		return l
	}
	if len(t.m) >= leaseTableSize {
		// Drop the idle ones; a dropped lease only costs one more Redis call.
		for b, x := range t.m {
			x.mu.Lock()
			idle := !now.Before(x.until) && !now.Before(x.deniedUntil) && x.call == nil
			x.mu.Unlock()
			if idle {
				delete(t.m, b)
			}
		}
	}
	// A new lease, also when the rate changed (a per-key limit was changed).
	l = &lease{bucket: bucket.name(), rate: rate}
	t.m[bucket] = l
	return l
}

func (t *leaseTable) paused(now time.Time) bool {
	return now.UnixNano() < t.pausedUntil.Load()
}

func (t *leaseTable) pause(until time.Time, err error) {
	t.err.Store(&err)
	t.pausedUntil.Store(until.UnixNano())
}

// lastErr is the limiter's last failure (nil if it never failed).
func (t *leaseTable) lastErr() error {
	if p := t.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Blocked reports whether the client address ip is blocked for failing authentication too
// often on the public listener, and for how much longer (see AuthGuard.Blocked).
func (s *Service) Blocked(ip netip.Addr) (time.Duration, bool) {
	return s.publicAuth.Blocked(ip)
}

// AuthFailed counts a failed authentication from ip on the public listener (see
// AuthGuard.AuthFailed).
func (s *Service) AuthFailed(ctx context.Context, ip netip.Addr) (time.Duration, bool) {
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
func (g *AuthGuard) Blocked(ip netip.Addr) (time.Duration, bool) {
	return g.blocked.blocked(ip, g.s.now())
}

// AuthFailed counts a failed authentication from ip. When the address is over its limit it
// is blocked until it is under again, and AuthFailed returns how long that is. A limiter
// failure lets the failure through uncounted (fail open, logged).
func (g *AuthGuard) AuthFailed(ctx context.Context, ip netip.Addr) (time.Duration, bool) {
	s := g.s
	n := s.limits.AuthFailuresPerMinute
	if s.limiter == nil || n <= 0 {
		return 0, false
	}
	if s.leases.paused(s.now()) {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, s.limits.rateTimeout())
	defer cancel()
	d, err := s.limiter.Take(ctx, g.bucket+ip.String(), n, n, time.Minute, 1)
	if err != nil {
		s.leases.pause(s.now().Add(limiterPause), err)
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
	until *fifo.Map[netip.Addr, time.Time]
}

func newBlockList(size int) *blockList {
	return &blockList{until: fifo.New[netip.Addr, time.Time](size)}
}

func (b *blockList) blocked(ip netip.Addr, now time.Time) (time.Duration, bool) {
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

func (b *blockList) block(ip netip.Addr, until time.Time) { b.until.Put(ip, until) }

// throttledLog writes one warning per interval about a failing dependency, so an outage
// under load is reported without flooding the log.
type throttledLog struct {
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	last     time.Time
	suppress int
}

func (t *throttledLog) warn(ctx context.Context, msg string, err error, attrs ...any) {
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
	errText := "none recorded"
	if err != nil {
		errText = err.Error()
	}
	t.log.WarnContext(ctx, msg, append(attrs, "error", errText, "suppressed_since_last", n)...)
}
