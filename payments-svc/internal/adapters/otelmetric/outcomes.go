// Package otelmetric reports what the collection engine does as OpenTelemetry metrics.
package otelmetric

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"rentalplatform/payments-svc/internal/app"
	"rentalplatform/payments-svc/internal/domain"
)

// MetricAttempts is the counter of recorded collection attempts, by outcome (in Prometheus:
// payments_attempts_total{outcome="succeeded|retrying|failed"}).
const MetricAttempts = "payments.attempts"

// Outcomes implements app.Outcomes.
type Outcomes struct {
	attempts metric.Int64Counter
	// opts holds each outcome's attribute set, made once.
	opts map[domain.Outcome][]metric.AddOption
}

var _ app.Outcomes = (*Outcomes)(nil)

// NewOutcomes returns the counter of attempt outcomes, made with mp.
func NewOutcomes(mp metric.MeterProvider) (*Outcomes, error) {
	attempts, err := mp.Meter("rentalplatform/payments-svc").Int64Counter(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Collection attempts recorded, by outcome: succeeded, retrying (a retry is scheduled) or failed (no retry left)."))
	if err != nil {
		return nil, fmt.Errorf("payment attempt metrics: %w", err)
	}
	o := &Outcomes{attempts: attempts, opts: map[domain.Outcome][]metric.AddOption{}}
	for outcome, name := range map[domain.Outcome]string{
		domain.OutcomeSucceeded: "succeeded", domain.OutcomeRetrying: "retrying", domain.OutcomeFailed: "failed",
	} {
		o.opts[outcome] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", name)))}
	}
	return o, nil
}

// AttemptRecorded implements app.Outcomes.
func (o *Outcomes) AttemptRecorded(ctx context.Context, outcome domain.Outcome) {
	opts, ok := o.opts[outcome]
	if !ok {
		opts = []metric.AddOption{metric.WithAttributes(attribute.String("outcome", "unknown"))}
	}
	o.attempts.Add(ctx, 1, opts...)
}
