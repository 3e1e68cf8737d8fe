package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Lines logged inside a span carry its trace and span ids; others carry neither.
func TestTraceHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(TraceHandler(slog.NewJSONHandler(&buf, nil))).With("service", "x")
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "work")
	log.InfoContext(ctx, "inside")
	span.End()
	log.InfoContext(context.Background(), "outside")
	log.Info("no context")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &in); err != nil {
		t.Fatal(err)
	}
	if in["trace_id"] != span.SpanContext().TraceID().String() || in["span_id"] != span.SpanContext().SpanID().String() || in["service"] != "x" {
		t.Errorf("line inside the span: %s", lines[0])
	}
	for _, l := range lines[1:] {
		if strings.Contains(l, "trace_id") || strings.Contains(l, "span_id") {
			t.Errorf("line outside any span carries ids: %s", l)
		}
	}
}
