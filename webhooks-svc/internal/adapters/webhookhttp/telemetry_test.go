package webhookhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"rentalplatform/webhooks-svc/internal/app"
)

func newSender(t *testing.T, cfg Config) *Sender {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each attempt is a client span of the caller's trace that names the receiver by host and port
// only (a URL's path and query may be its credentials), sends no trace context to the
// receiver, and is counted by result.
func TestAttemptSpanAndMetrics(t *testing.T) {
	var traceHeaders []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k := range r.Header {
			if k := strings.ToLower(k); k == "traceparent" || k == "tracestate" || k == "baggage" {
				traceHeaders = append(traceHeaders, k)
			}
		}
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	s := newSender(t, Config{Timeout: 5 * time.Second, AllowPrivate: true, TLSInsecure: true, TracerProvider: tp, MeterProvider: mp})

	ctx, parent := tp.Tracer("test").Start(context.Background(), "process event")
	for _, path := range []string{"/hooks/T0SECRET/B0SECRET?token=SECRET", "/hooks/T0SECRET/B0SECRET?token=SECRET", "/fail/SECRET"} {
		s.Send(ctx, app.Request{URL: srv.URL + path, MessageID: "evt_1", Timestamp: time.Now(), Secrets: []string{secretA}})
	}
	parent.End()

	var attempts []sdktrace.ReadOnlySpan
	for _, sp := range spans.Ended() {
		if sp.SpanKind() == trace.SpanKindClient {
			attempts = append(attempts, sp)
		}
	}
	if len(attempts) != 3 {
		t.Fatalf("%d client spans, want 3", len(attempts))
	}
	for i, sp := range attempts {
		if sp.Parent().SpanID() != parent.SpanContext().SpanID() || sp.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("attempt %d is not a child of the caller's span", i)
		}
		attrs := map[string]string{}
		for _, a := range sp.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
			if strings.Contains(a.Value.String(), "SECRET") {
				t.Errorf("attempt %d: attribute %s = %q holds the URL's path or query", i, a.Key, a.Value.String())
			}
		}
		wantStatus, failed := "200", i == 2
		if failed {
			wantStatus = "500"
		}
		if attrs["server.address"] != "127.0.0.1" || attrs["server.port"] == "" || attrs["url.scheme"] != "https" ||
			attrs["http.response.status_code"] != wantStatus || attrs["webhook.message_id"] != "evt_1" {
			t.Errorf("attempt %d attributes %v", i, attrs)
		}
		if failed != (attrs["error.type"] == "http_status") || failed != (sp.Status().Code.String() == "Error") {
			t.Errorf("attempt %d: error.type %q, status %v", i, attrs["error.type"], sp.Status())
		}
	}
	if len(traceHeaders) > 0 {
		t.Errorf("the receiver got trace context headers %v", traceHeaders)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	var measured uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name == MetricAttempts {
					for _, dp := range data.DataPoints {
						v, _ := dp.Attributes.Value("result")
						counts[v.AsString()] += dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				if m.Name == MetricAttemptDuration {
					for _, dp := range data.DataPoints {
						measured += dp.Count
					}
				}
			}
		}
	}
	if counts[ResultSucceeded] != 2 || counts["http_status"] != 1 || len(counts) != 2 || measured != 3 {
		t.Fatalf("attempts by result %v, %d measured; want 2 succeeded, 1 http_status, 3 measured", counts, measured)
	}
}
