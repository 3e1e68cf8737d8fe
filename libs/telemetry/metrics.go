package telemetry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// DurationBuckets are the histogram bounds, in seconds, of every duration the platform
// records: the OpenTelemetry HTTP semantic conventions' bounds, from 5 ms to 10 s.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// setupMetrics makes the meter provider and the scrape handler. Metrics are pulled, not pushed:
// the Prometheus exporter is a reader that collects from the instruments when /metrics is
// scraped, so recording costs only the aggregation and nothing runs between scrapes.
//
// The registry is the process's own (never Prometheus's global one, which two runtimes in one
// test binary would fight over). It also holds the Go runtime and process collectors: heap,
// goroutines, GC pauses, open file descriptors, CPU seconds. service.name is put on every
// series as service_name, so a query across programs needs no join with target_info.
func (t *Telemetry) setupMetrics(res *resource.Resource) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("metrics: Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("metrics: process collector: %w", err)
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(),
		otelprom.WithResourceAsConstantLabels(attribute.NewAllowKeysFilter(semconv.ServiceNameKey)))
	if err != nil {
		return fmt.Errorf("metrics: Prometheus exporter: %w", err)
	}
	mp := metric.NewMeterProvider(metric.WithReader(exp), metric.WithResource(res))
	t.MeterProvider = mp
	t.shutdown = append(t.shutdown, mp.Shutdown)
	t.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return nil
}
