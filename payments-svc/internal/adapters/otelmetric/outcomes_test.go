package otelmetric

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"rentalplatform/payments-svc/internal/domain"
)

func TestOutcomesAreCountedByOutcome(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	o, err := NewOutcomes(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, out := range []domain.Outcome{domain.OutcomeSucceeded, domain.OutcomeRetrying, domain.OutcomeRetrying, domain.OutcomeFailed} {
		o.AttemptRecorded(ctx, out)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != MetricAttempts {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := dp.Attributes.Value("outcome")
				got[v.AsString()] = dp.Value
			}
		}
	}
	if got["succeeded"] != 1 || got["retrying"] != 2 || got["failed"] != 1 || len(got) != 3 {
		t.Fatalf("attempts by outcome %v", got)
	}
}
