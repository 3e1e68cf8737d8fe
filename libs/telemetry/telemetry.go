// Package telemetry sets up OpenTelemetry for one process — traces exported over OTLP/HTTP,
// metrics served to Prometheus — and carries trace context across the hops that are not HTTP
// (asynq task headers, log lines).
//
// The standard OTEL_* variables that decide what a process is and whether and where it sends
// spans (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG),
// OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and _PROTOCOL) are read by
// libs/config with the rest of the configuration, so a bad value is reported at start with the
// other problems and a test's getenv reaches them too; they arrive here as Config. The
// exporter's transport details (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, …) and the batch processor's (OTEL_BSP_*) are left to the SDK, which reads
// them from the process environment itself. This package never reads the environment.
package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Config says how to observe one process.
type Config struct {
	// ServiceName is service.name: the program's name ("webhooks-svc"), or OTEL_SERVICE_NAME.
	ServiceName string
	// Environment is deployment.environment.name: the deployment mode ("local", "compose",
	// "production", …), from DEPLOYMENT_ENVIRONMENT.
	Environment string
	// ResourceAttributes are OTEL_RESOURCE_ATTRIBUTES; they win over everything above and over
	// the built-in service.version (ParseResourceAttributes).
	ResourceAttributes []attribute.KeyValue
	// TracesEndpoint is the full URL spans are POSTed to over OTLP/HTTP
	// ("http://collector:4318/v1/traces"); empty, spans are still made, so trace ids reach the
	// logs and propagate to the next hop, but nothing leaves the process.
	TracesEndpoint string
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (NewSampler);
	// empty is parentbased_always_on, the specification's default.
	Sampler, SamplerArg string
}

// Telemetry holds the process's tracer and meter providers and propagator.
type Telemetry struct {
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	// MeterProvider makes the process's instruments; what they record is served in the
	// Prometheus text format by Metrics.
	MeterProvider metric.MeterProvider
	// Metrics is the scrape endpoint's handler (GET /metrics on the metrics listener).
	Metrics http.Handler
	// Sampler is the tracer provider's sampler, for middleware that decides whether a request
	// is traced before it asks the provider for a span (fiberx). The provider draws root
	// trace ids with IDGenerator, so such middleware can hand it the id it sampled.
	Sampler sdktrace.Sampler
	// Resource describes the process on every span and in the metrics' target_info.
	Resource *resource.Resource

	shutdown []func(context.Context) error
}

// Setup builds the tracer and meter providers. The tracer provider and the W3C trace-context
// and baggage propagators are also installed as the OpenTelemetry globals, which
// instrumentation libraries fall back to; the meter provider is not: every instrument of the
// platform is made from Telemetry.MeterProvider explicitly, and a library reaching for the
// global one (otelfiber does) records nothing.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	sampler, err := NewSampler(cfg.Sampler, cfg.SamplerArg)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	res, err := newResource(cfg)
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sampler),
		sdktrace.WithIDGenerator(IDGenerator())}
	if cfg.TracesEndpoint != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.TracesEndpoint))
		if err != nil {
			return nil, fmt.Errorf("telemetry OTLP exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(prop)
	t := &Telemetry{TracerProvider: tp, Propagator: prop, Resource: res, Sampler: sampler}
	t.shutdown = append(t.shutdown, tp.Shutdown)
	if err := t.setupMetrics(res); err != nil {
		return nil, errors.Join(err, t.Shutdown(ctx))
	}
	return t, nil
}

// newResource describes the process: service.name, service.version (Version: the image build's
// stamp, else the module version or VCS revision), service.instance.id (random per start, so
// replicas are told apart), deployment.environment.name, and the SDK's own attributes;
// OTEL_RESOURCE_ATTRIBUTES last, winning over all of them.
func newResource(cfg Config) (*resource.Resource, error) {
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	attrs := []attribute.KeyValue{
		semconv.ServiceName(cfg.ServiceName),
		semconv.ServiceVersion(Version()),
		semconv.ServiceInstanceID(hex.EncodeToString(id[:])),
	}
	if cfg.Environment != "" {
		attrs = append(attrs, semconv.DeploymentEnvironmentName(cfg.Environment))
	}
	attrs = append(attrs, cfg.ResourceAttributes...)
	// Schemaless: the SDK's default resource carries its own schema URL, and two different
	// ones refuse to merge.
	return resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
}

// Shutdown flushes pending spans and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		if err := t.shutdown[i](ctx); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	t.shutdown = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry shutdown: %w", err)
	}
	return nil
}

// Inject writes ctx's trace context into headers (asynq task headers are a map[string]string).
func (t *Telemetry) Inject(ctx context.Context, headers map[string]string) {
	t.Propagator.Inject(ctx, propagation.MapCarrier(headers))
}

// Extract returns ctx carrying the trace context found in headers.
func (t *Telemetry) Extract(ctx context.Context, headers map[string]string) context.Context {
	return t.Propagator.Extract(ctx, propagation.MapCarrier(headers))
}

// Detached returns a context for work that outlives the request of ctx (it runs after the
// answer): the trace of ctx, whose span becomes its parent, and nothing else of it, neither its
// end nor its request-scoped values.
func Detached(ctx context.Context) context.Context {
	return trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(ctx))
}

// SpanStarter returns what starts the span of work a process runs on its own in a request's
// trace (a payment's first attempt, run after the create answered): a span named name, of kind
// internal, a child of the span in ctx, with attrs as key, value pairs of strings (a key without
// a value is dropped). end ends it, recording err as its error when not nil.
func SpanStarter(tp trace.TracerProvider, scope string) func(ctx context.Context, name string, attrs ...string) (context.Context, func(err error)) {
	tracer := tp.Tracer(scope)
	return func(ctx context.Context, name string, attrs ...string) (context.Context, func(error)) {
		kv := make([]attribute.KeyValue, 0, len(attrs)/2)
		for i := 0; i+1 < len(attrs); i += 2 {
			kv = append(kv, attribute.String(attrs[i], attrs[i+1]))
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kv...))
		return ctx, func(err error) {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}

// TraceID returns the id of the trace of the span in ctx, or "" when there is none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}
