package webhookhttp

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"rentalplatform/libs/telemetry"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Instrument names (in Prometheus: webhooks_delivery_attempts_total and
// webhooks_delivery_attempt_duration_seconds_*). The delivery success rate is the share of
// attempts whose result is "succeeded".
const (
	MetricAttempts        = "webhooks.delivery.attempts"
	MetricAttemptDuration = "webhooks.delivery.attempt.duration"
)

// ResultSucceeded labels an attempt answered with a 2xx; any other attempt is labelled with
// its error code (domain.AttemptErrorCode: http_status, connection_refused, …).
const ResultSucceeded = "succeeded"

// attemptMetrics counts attempts and measures them, by result. The results are a fixed set,
// so their attribute sets are made once.
type attemptMetrics struct {
	attempts metric.Int64Counter
	duration metric.Float64Histogram
	counted  map[domain.AttemptErrorCode][]metric.AddOption
	measured map[domain.AttemptErrorCode][]metric.RecordOption
}

func newAttemptMetrics(mp metric.MeterProvider) (*attemptMetrics, error) {
	meter := mp.Meter("rentalplatform/webhooks-svc/webhookhttp")
	attempts, err := meter.Int64Counter(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Webhook delivery attempts made, by result: succeeded (a 2xx) or why not."))
	if err != nil {
		return nil, fmt.Errorf("webhook attempt metrics: %w", err)
	}
	duration, err := meter.Float64Histogram(MetricAttemptDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of webhook delivery attempts, from connecting to the end of the response, by result."),
		metric.WithExplicitBucketBoundaries(telemetry.DurationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("webhook attempt metrics: %w", err)
	}
	m := &attemptMetrics{attempts: attempts, duration: duration,
		counted: map[domain.AttemptErrorCode][]metric.AddOption{}, measured: map[domain.AttemptErrorCode][]metric.RecordOption{}}
	for _, code := range []domain.AttemptErrorCode{"", domain.AttemptDNSResolutionFailed, domain.AttemptConnectionRefused,
		domain.AttemptConnectionTimeout, domain.AttemptAddressNotAllowed, domain.AttemptTLSHandshakeFailed,
		domain.AttemptTLSCertificateInvalid, domain.AttemptResponseTimeout, domain.AttemptHTTPStatus, domain.AttemptConnectionFailed} {
		result := string(code)
		if code == "" {
			result = ResultSucceeded
		}
		opt := metric.WithAttributeSet(attribute.NewSet(attribute.String("result", result)))
		m.counted[code] = []metric.AddOption{opt}
		m.measured[code] = []metric.RecordOption{opt}
	}
	return m, nil
}

// record counts one attempt. Its context is not the attempt's: a late first attempt is still
// counted after the fan-out that made it has moved on.
func (m *attemptMetrics) record(res domain.Result) {
	code := res.Attempt().ErrorCode // the domain's classification, as the API shows it
	ctx := context.Background()
	m.attempts.Add(ctx, 1, m.counted[code]...)
	m.duration.Record(ctx, res.Duration.Seconds(), m.measured[code]...)
}
