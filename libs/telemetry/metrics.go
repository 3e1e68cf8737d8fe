package telemetry

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	t.MeterProvider = mp
	t.shutdown = append(t.shutdown, mp.Shutdown)
	t.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return nil
}

// AttrSets keeps the attribute set of each key of a bounded kind (a route and status, a queue
// and task type), made once by newSet and kept as the record options that carry it, ready to
// pass on: recording with a known key then allocates nothing (a variadic call through an
// interface would allocate the options slice every time). Past limit keys, which the labels'
// design should never reach, sets are made per call instead of growing the map.
type AttrSets[K comparable] struct {
	newSet func(K) attribute.Set
	limit  int

	mu sync.RWMutex
	m  map[K][]metric.RecordOption
}

// NewAttrSets returns an empty AttrSets.
func NewAttrSets[K comparable](limit int, newSet func(K) attribute.Set) *AttrSets[K] {
	return &AttrSets[K]{newSet: newSet, limit: limit, m: map[K][]metric.RecordOption{}}
}

// Options returns the record options of k's attribute set.
func (s *AttrSets[K]) Options(k K) []metric.RecordOption {
	s.mu.RLock()
	opts, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return opts
	}
	opts = []metric.RecordOption{metric.WithAttributeSet(s.newSet(k))}
	s.mu.Lock()
	if len(s.m) < s.limit {
		s.m[k] = opts
	}
	s.mu.Unlock()
	return opts
}
