package app

import (
	"context"
	"net/netip"
	"time"
)

// HostedRateLimit takes one request of client address ip from its budget for hosted pages
// (Limits.HostedPerMinute): the pages the public listener serves to a browser without an API
// key (an applicant's verification page), so there is no account to count against. ok is
// false when no limit applies: the limit is off, or the limiter cannot be asked, in which case
// the request goes ahead (fail open, as for failed authentications: a Redis outage must not
// take the pages down; the secrets they take are out of guessing range, and wrong ones count
// as failed authentications besides).
func (s *Service) HostedRateLimit(ctx context.Context, ip netip.Addr) (d RateDecision, ok bool) {
	n := s.limits.HostedPerMinute
	if s.limiter == nil || n <= 0 || s.leases.paused(s.now()) {
		return RateDecision{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, s.limits.rateTimeout())
	defer cancel()
	got, err := s.limiter.Take(ctx, "hosted:"+ip.String(), n, n, time.Minute, 1)
	if err != nil {
		s.leases.pause(s.now().Add(limiterPause), err)
		s.redisLog.warn(ctx, "hosted pages' rate limit not enforced: the limiter is unavailable (failing open)", err)
		return RateDecision{}, false
	}
	got.Allowed = got.Granted > 0
	return got, true
}
