// Package telemetry sets up OpenTelemetry tracing for one process and carries trace context
// across the hops that are not HTTP (asynq task headers).
//
// The SDK reads the standard OTEL_* variables itself (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_EXPORTER_OTLP_*); the caller only says
// whether an exporter is configured, so this package never reads the environment.
package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Config says how to trace one process.
type Config struct {
	ServiceName string
	// Export sends spans over OTLP/HTTP to the endpoint given by the OTEL_EXPORTER_OTLP_*
	// variables. Without it spans are still made, so trace ids reach the logs and propagate to
	// the next hop, but nothing leaves the process.
	Export bool
}

// Telemetry holds the process's tracer provider and propagator.
type Telemetry struct {
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	shutdown       func(context.Context) error
}

// Setup builds the tracer provider and installs it, with the W3C trace-context and baggage
// propagators, as the OpenTelemetry globals (instrumentation libraries read those).
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(cfg.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the built-in name.
	if envRes, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, envRes); err == nil {
			res = merged
		}
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if cfg.Export {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry OTLP exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(prop)
	return &Telemetry{TracerProvider: tp, Propagator: prop, shutdown: tp.Shutdown}, nil
}

// Shutdown flushes pending spans.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if err := t.shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
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

// TraceID returns the id of the span in ctx, or "" when there is none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}
