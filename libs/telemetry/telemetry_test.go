package telemetry

import (
	"context"
	"testing"
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
