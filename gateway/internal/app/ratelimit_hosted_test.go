package app_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"rentalplatform/gateway/internal/app"
)

// The hosted pages are limited per client address, in a bucket of their own, and fail open.
func TestHostedRateLimit(t *testing.T) {
	ctx := context.Background()
	ip, other := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	lim := newFakeLimiter(2)
	s := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim, Limits: app.Limits{HostedPerMinute: 2}})
	for i := range 2 {
		if d, ok := s.HostedRateLimit(ctx, ip); !ok || !d.Allowed {
			t.Fatalf("request %d: %+v %v, want allowed", i+1, d, ok)
		}
	}
	d, ok := s.HostedRateLimit(ctx, ip)
	if !ok || d.Allowed || d.RetryAfter != 3*time.Second {
		t.Fatalf("3rd request: %+v %v, want refused for 3s", d, ok)
	}
	if d, ok := s.HostedRateLimit(ctx, other); !ok || !d.Allowed {
		t.Fatalf("another address: %+v %v", d, ok)
	}
	if lim.callsTo("hosted:192.0.2.1") != 3 || lim.rates["hosted:192.0.2.1"] != 2 {
		t.Fatalf("bucket calls %d, rate %d", lim.callsTo("hosted:192.0.2.1"), lim.rates["hosted:192.0.2.1"])
	}
	// The API's failed-authentication block is another bucket.
	if _, blocked := s.Blocked(ip); blocked {
		t.Fatal("the hosted limit blocked the address")
	}

	off := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim, Limits: app.Limits{HostedPerMinute: 0}})
	if _, ok := off.HostedRateLimit(ctx, ip); ok {
		t.Fatal("a limit of 0 limited")
	}
	failing := newFakeLimiter(1)
	failing.fail = errors.New("dial tcp: connection refused")
	open := newService(t, newMemKeys(), newClock(), app.Options{Limiter: failing, Limits: app.Limits{HostedPerMinute: 1}})
	for range 2 {
		if _, ok := open.HostedRateLimit(ctx, ip); ok {
			t.Fatal("a failing limiter limited; want fail open")
		}
	}
}
