// Package otelmetric reports what the gateway's use cases do as OpenTelemetry metrics.
package otelmetric

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
)

// MetricLimiterUnavailable counts the requests whose rate limit could not be checked, by access
// and the policy applied (in Prometheus:
// gateway_ratelimit_unavailable_total{access="read|write",policy="open|closed"}).
const MetricLimiterUnavailable = "gateway.ratelimit.unavailable"

// Limiter implements app.LimiterMonitor.
type Limiter struct {
	unavailable metric.Int64Counter
	// opts holds each (access, mode) pair's attribute set, made once: the counter is added to
	// on every request of an outage.
	opts map[limiterKey][]metric.AddOption
}

type limiterKey struct {
	access domain.Access
	mode   app.FailMode
}

var _ app.LimiterMonitor = (*Limiter)(nil)

// NewLimiter returns the counter of unchecked rate limits, made with mp.
func NewLimiter(mp metric.MeterProvider) (*Limiter, error) {
	c, err := mp.Meter("rentalplatform/gateway").Int64Counter(MetricLimiterUnavailable, metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose rate limit could not be checked (the limiter failed or was too slow), by access (read: GET and HEAD; write: the rest) and the policy applied: open (let through) or closed (refused with 503)."))
	if err != nil {
		return nil, fmt.Errorf("rate limit metrics: %w", err)
	}
	l := &Limiter{unavailable: c, opts: map[limiterKey][]metric.AddOption{}}
	for _, access := range []domain.Access{domain.AccessRead, domain.AccessWrite} {
		for _, mode := range []app.FailMode{app.FailOpen, app.FailClosed} {
			l.opts[limiterKey{access, mode}] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				attribute.String("access", access.String()), attribute.String("policy", mode.String())))}
		}
	}
	return l, nil
}

// LimiterUnavailable implements app.LimiterMonitor.
func (l *Limiter) LimiterUnavailable(ctx context.Context, access domain.Access, mode app.FailMode) {
	l.unavailable.Add(ctx, 1, l.opts[limiterKey{access, mode}]...)
}
