package telemetry

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestPropagationThroughHeaders(t *testing.T) {
	ctx := context.Background()
	tel, err := Setup(ctx, Config{ServiceName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)

	ctx, span := tel.TracerProvider.Tracer("test").Start(ctx, "publish")
	headers := map[string]string{}
	tel.Inject(ctx, headers)
	span.End()
	if headers["traceparent"] == "" {
		t.Fatalf("no traceparent injected: %v", headers)
	}
	got := tel.Extract(context.Background(), headers)
	if TraceID(got) != TraceID(ctx) || TraceID(got) == "" {
		t.Fatalf("trace id %q after extract, want %q", TraceID(got), TraceID(ctx))
	}
	if TraceID(context.Background()) != "" {
		t.Fatal("trace id from an empty context")
	}
}

func TestDetachedKeepsTheTraceOnly(t *testing.T) {
	tel, err := Setup(context.Background(), Config{ServiceName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "request-scoped"))
	ctx, span := tel.TracerProvider.Tracer("test").Start(ctx, "create")
	span.End()
	cancel()

	d := Detached(ctx)
	if got, want := TraceID(d), TraceID(ctx); got == "" || got != want {
		t.Errorf("detached trace %q, want %q", got, want)
	}
	if d.Err() != nil {
		t.Errorf("detached context ended with its parent: %v", d.Err())
	}
	if d.Value(key{}) != nil {
		t.Error("detached context kept a request-scoped value")
	}
}

func TestSpanStarter(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	ctx, parent := tp.Tracer("test").Start(context.Background(), "create")
	parent.End()

	start := SpanStarter(tp, "test")
	c, end := start(Detached(ctx), "run work", "work.id", "w_1", "dropped")
	if got := trace.SpanContextFromContext(c); !got.IsValid() || got.SpanID() == parent.SpanContext().SpanID() {
		t.Fatalf("the context holds span %v, want the new one", got)
	}
	end(errors.New("declined"))

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2", len(spans))
	}
	s := spans[1]
	if s.Name != "run work" || s.SpanKind != trace.SpanKindInternal || s.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("span %q kind %v parent %v; want run work, internal, under create", s.Name, s.SpanKind, s.Parent.SpanID())
	}
	if len(s.Attributes) != 1 || string(s.Attributes[0].Key) != "work.id" || s.Attributes[0].Value.AsString() != "w_1" {
		t.Errorf("attributes %v, want work.id=w_1 alone", s.Attributes)
	}
	if s.Status.Code != codes.Error || s.Status.Description != "declined" {
		t.Errorf("status %v, want the error", s.Status)
	}
}
