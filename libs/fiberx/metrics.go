package fiberx

import (
	"context"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"rentalplatform/libs/telemetry"
)

// Instrument names of the HTTP servers' RED metrics: one histogram gives the rate (its count),
// the errors (its count for status codes >= 500) and the duration. They follow the
// OpenTelemetry HTTP semantic conventions, so dashboards made for those fit; in Prometheus the
// histogram is http_server_request_duration_seconds_{bucket,count,sum}.
const (
	MetricRequestDuration = "http.server.request.duration"
	MetricActiveRequests  = "http.server.active_requests"
)

// maxAttrSets bounds the attribute sets remembered (telemetry.AttrSets).
const maxAttrSets = 4096

// serverMetrics records each request's duration with the attributes of its method, route and
// status, whose set is made once per (method, route, status): recording a request then
// allocates nothing.
type serverMetrics struct {
	duration metric.Float64Histogram
	route    func(*fiber.Ctx) string
	// active counts the requests in flight; the SDK reads it when metrics are collected (an
	// observable counter), so a request costs two atomic adds rather than two SDK calls.
	active atomic.Int64
	sets   *telemetry.AttrSets[attrKey]
}

type attrKey struct {
	method string // one of KnownMethod's, never Fiber's reused buffer
	route  string
	status int
}

func newServerMetrics(mp metric.MeterProvider, listener string, route func(*fiber.Ctx) string) (*serverMetrics, error) {
	meter := mp.Meter("rentalplatform/libs/fiberx")
	duration, err := meter.Float64Histogram(MetricRequestDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP requests served, by method, route and status code."),
		metric.WithExplicitBucketBoundaries(telemetry.DurationBuckets...))
	if err != nil {
		return nil, err
	}
	if route == nil {
		route = func(c *fiber.Ctx) string { return c.Route().Path }
	}
	m := &serverMetrics{
		duration: duration, route: route,
		sets: telemetry.NewAttrSets(maxAttrSets, func(k attrKey) attribute.Set {
			return attribute.NewSet(
				attribute.String("http.request.method", k.method),
				attribute.String("http.route", k.route),
				attribute.Int("http.response.status_code", k.status),
			)
		}),
	}
	// One instrument for every listener of the process (the gateway has two), each observing
	// its own count through a callback of its own.
	active, err := meter.Int64ObservableUpDownCounter(MetricActiveRequests, metric.WithUnit("{request}"),
		metric.WithDescription("HTTP requests being served."))
	if err != nil {
		return nil, err
	}
	listenerAttr := metric.WithAttributeSet(attribute.NewSet(attribute.String("listener", listener)))
	if _, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(active, m.active.Load(), listenerAttr)
		return nil
	}, active); err != nil {
		return nil, err
	}
	return m, nil
}

// begin counts a request in flight; end counts it out.
func (m *serverMetrics) begin() { m.active.Add(1) }

// end records a finished request. ctx is background: the request's own context may be over by
// now, and an exemplar's trace is not kept.
func (m *serverMetrics) end(c *fiber.Ctx, status int, took time.Duration) {
	m.active.Add(-1)
	m.duration.Record(context.Background(), took.Seconds(), m.sets.Options(attrKey{method: KnownMethod(c.Method()), route: m.route(c), status: status})...)
}

// KnownMethod returns the method as one of a fixed set of strings (the semantic conventions'
// _OTHER for the rest): Fiber's c.Method() points into a buffer the next request reuses, and
// the set bounds the label's values.
func KnownMethod(m string) string {
	switch m {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodPost:
		return http.MethodPost
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodHead:
		return http.MethodHead
	case http.MethodOptions:
		return http.MethodOptions
	}
	return "_OTHER"
}

// MetricsApp is the app of a program's metrics listener: GET /metrics serves h (the Prometheus
// scrape endpoint, telemetry.Telemetry.Metrics), and with profiles the Go runtime's profiles
// under /debug/pprof/ (`go tool pprof http://ADDR/debug/pprof/heap`); everything else is 404.
// It is meant for an internal address only (METRICS_ADDR), never the public listener.
func MetricsApp(h http.Handler, profiles bool) *fiber.App {
	// A CPU profile or a trace takes as long as its ?seconds= asks (30 s by default).
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute})
	app.Get("/metrics", adaptor.HTTPHandler(h))
	if profiles {
		app.Get("/debug/pprof/cmdline", adaptor.HTTPHandlerFunc(pprof.Cmdline))
		app.Get("/debug/pprof/profile", adaptor.HTTPHandlerFunc(pprof.Profile))
		app.Get("/debug/pprof/symbol", adaptor.HTTPHandlerFunc(pprof.Symbol))
		app.Get("/debug/pprof/trace", adaptor.HTTPHandlerFunc(pprof.Trace))
		app.Get("/debug/pprof/*", adaptor.HTTPHandlerFunc(pprof.Index)) // heap, goroutine, allocs …
	}
	return app
}
