package http

import (
	"context"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/libs/apierr"
)

// Rate-limit response headers (IETF draft "RateLimit header fields for HTTP").
const (
	headerRateLimit     = "RateLimit-Limit"
	headerRateRemaining = "RateLimit-Remaining"
	headerRateReset     = "RateLimit-Reset"
)

// codeAuthRateLimited is the code of a client address blocked for failed authentications.
const codeAuthRateLimited = "authentication_rate_limited"

// seconds rounds d up to whole seconds, the unit of Retry-After and RateLimit-Reset.
func seconds(d time.Duration) string {
	return strconv.FormatInt(ceilSeconds(d), 10)
}

func ceilSeconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

func setRateHeaders(c *fiber.Ctx, d app.RateDecision) {
	h := &c.Response().Header
	var buf [20]byte
	h.SetBytesV(headerRateLimit, strconv.AppendInt(buf[:0], int64(d.Limit), 10))
	h.SetBytesV(headerRateRemaining, strconv.AppendInt(buf[:0], int64(d.Remaining), 10))
	h.SetBytesV(headerRateReset, strconv.AppendInt(buf[:0], ceilSeconds(d.ResetAfter), 10))
}

// rateLimited is the 429 of a key over its account's (or its own) rate limit.
func rateLimited(c *fiber.Ctx, retry time.Duration) *apierr.Error {
	c.Set(fiber.HeaderRetryAfter, seconds(max(retry, time.Second)))
	return apierr.New(http.StatusTooManyRequests, apierr.RateLimit, apierr.CodeRateLimited,
		"Too many requests hit the API too quickly for this account and mode. Retry after the number of seconds in Retry-After, and spread requests out (see the RateLimit-* headers).")
}

// limiterUnavailable is the 503 of a request whose rate limit cannot be checked while the
// policy for its access is closed (GATEWAY_RATE_LIMIT_UNAVAILABLE_*). It is a 5xx, so an
// idempotent request's answer is not kept: a retry runs.
func limiterUnavailable(c *fiber.Ctx) *apierr.Error {
	c.Set(fiber.HeaderRetryAfter, "1")
	return apierr.New(http.StatusServiceUnavailable, apierr.API, apierr.CodeServiceUnavailable,
		"Rate limits cannot be checked right now, so this request was not run. Retry it after the number of seconds in Retry-After.")
}

// AuthLimit is the failed-authentication limit of one listener (app.AuthGuard; the public
// listener's is part of Limits).
type AuthLimit interface {
	// Blocked reports whether a client address is blocked for failed authentications.
	Blocked(ip netip.Addr) (time.Duration, bool)
	// AuthFailed counts a failed authentication and reports whether the address is now
	// blocked, and for how long.
	AuthFailed(ctx context.Context, ip netip.Addr) (time.Duration, bool)
}

// authBlocked is the 429 of a client address that failed authentication too often.
func authBlocked(c *fiber.Ctx, retry time.Duration) *apierr.Error {
	c.Set(fiber.HeaderRetryAfter, seconds(max(retry, time.Second)))
	return apierr.New(http.StatusTooManyRequests, apierr.RateLimit, codeAuthRateLimited,
		"Too many requests with invalid API keys came from this address. Retry after the number of seconds in Retry-After with a valid key.")
}

// adminBlocked is the 429 of a client address that sent wrong admin tokens too often.
func adminBlocked(c *fiber.Ctx, retry time.Duration) *apierr.Error {
	c.Set(fiber.HeaderRetryAfter, seconds(max(retry, time.Second)))
	return apierr.New(http.StatusTooManyRequests, apierr.RateLimit, codeAuthRateLimited,
		"Too many requests with an invalid admin token came from this address. Retry after the number of seconds in Retry-After with the right token.")
}
