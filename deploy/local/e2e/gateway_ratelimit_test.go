package e2e

// Issue 4 end to end: the rate limit per account and mode, through the real stack.

import (
	"strconv"
	"testing"
	"time"
)

func TestGatewayRateLimitEndToEnd(t *testing.T) {
	p := startWith(t, stackConfig{env: map[string]string{"GATEWAY_RATE_LIMIT_TEST": "5", "GATEWAY_RATE_LIMIT_LIVE": "0"}})
	key := p.newKey(t, "acct_rl", false)
	liveKey := p.newKey(t, "acct_rl", true)
	url := p.GatewayURL + "/v1/webhook_endpoints"

	// The burst (5) passes, each answer counting down.
	var last response
	for i := 0; i < 5; i++ {
		last = call(t, "GET", url, key, nil)
		if last.Status != 200 || last.Header.Get("RateLimit-Limit") != "5" || last.Header.Get("RateLimit-Remaining") == "" ||
			last.Header.Get("RateLimit-Reset") == "" {
			t.Fatalf("request %d: %d %v", i+1, last.Status, last.Header)
		}
	}
	// Then 429, with Retry-After and the RateLimit headers (a refill may let one more pass).
	var limited response
	for i := 0; i < 3; i++ {
		if limited = call(t, "GET", url, key, nil); limited.Status == 429 {
			break
		}
	}
	if limited.Status != 429 || limited.errType() != "rate_limit_error" || limited.errCode() != "rate_limited" {
		t.Fatalf("after the burst: %d %s", limited.Status, limited.Raw)
	}
	retry, err := strconv.Atoi(limited.Header.Get("Retry-After"))
	if err != nil || retry < 1 || limited.Header.Get("RateLimit-Limit") != "5" || limited.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("429 headers: %v", limited.Header)
	}
	if reset, err := strconv.Atoi(limited.Header.Get("RateLimit-Reset")); err != nil || reset < 1 {
		t.Fatalf("RateLimit-Reset = %q", limited.Header.Get("RateLimit-Reset"))
	}
	// Live mode (limit 0 here) is a bucket of its own and unaffected.
	if res := call(t, "GET", url, liveKey, nil); res.Status != 200 || res.Header.Get("RateLimit-Limit") != "" {
		t.Fatalf("live key: %d %v", res.Status, res.Header)
	}
	// Recovery after Retry-After.
	time.Sleep(time.Duration(retry) * time.Second)
	if res := call(t, "GET", url, key, nil); res.Status != 200 {
		t.Fatalf("after Retry-After (%ds): %d %s", retry, res.Status, res.Raw)
	}
}
