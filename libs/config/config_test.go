package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestLoadBaseDefaults(t *testing.T) {
	b, err := LoadBase(env(map[string]string{"INTERNAL_AUTH_SECRET": strings.Repeat("x", 32)}),
		Defaults{HTTPAddr: "127.0.0.1:8094", MongoDatabase: "webhooks"})
	if err != nil {
		t.Fatal(err)
	}
	if b.HTTPAddr != "127.0.0.1:8094" || b.MongoDatabase != "webhooks" || b.MongoURI != "mongodb://127.0.0.1:27017" ||
		b.LogLevel != slog.LevelInfo || b.ShutdownTimeout != 10*time.Second || b.MetricsAddr != "127.0.0.1:9094" ||
		b.Telemetry.TracesEndpoint != "" || b.Telemetry.Environment != "local" || b.Telemetry.ServiceName != "" {
		t.Fatalf("defaults: %+v", b)
	}
}

func TestLoadBaseReportsEveryProblem(t *testing.T) {
	_, err := LoadBase(env(map[string]string{"LOG_LEVEL": "loud", "SHUTDOWN_TIMEOUT": "soon"}), Defaults{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"INTERNAL_AUTH_SECRET is required", "LOG_LEVEL", "SHUTDOWN_TIMEOUT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestReader(t *testing.T) {
	r := NewReader(env(map[string]string{"A": "32MiB", "B": "512KiB", "C": "100", "D": "x", "E": "7", "F": "true", "S": "short"}))
	if got := r.Bytes("A", 0); got != 32<<20 {
		t.Errorf("A = %d", got)
	}
	if got := r.Bytes("B", 0); got != 512<<10 {
		t.Errorf("B = %d", got)
	}
	if got := r.Bytes("C", 0); got != 100 {
		t.Errorf("C = %d", got)
	}
	if got := r.Int("E", 0, 0, 10); got != 7 {
		t.Errorf("E = %d", got)
	}
	if !r.Bool("F", false) {
		t.Error("F")
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	r.Bytes("D", 1)
	r.Int("E", 0, 8, 10)
	r.Secret("S")
	if err := r.Err(); err == nil || strings.Count(err.Error(), "\n") != 2 {
		t.Fatalf("want three errors, got %v", err)
	}
}

func TestTelemetry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		endpoint string
	}{
		{"nothing exported", nil, ""},
		{"base endpoint gets the signal path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, "http://collector:4318/v1/traces"},
		{"the signal's endpoint is used as is", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://traces.example/ingest",
		}, "https://traces.example/ingest"},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(env(tc.env))
			c := r.Telemetry()
			if err := r.Err(); err != nil || c.TracesEndpoint != tc.endpoint {
				t.Fatalf("TracesEndpoint %q, err %v; want %q", c.TracesEndpoint, err, tc.endpoint)
			}
		})
	}
	r := NewReader(env(map[string]string{
		"OTEL_SERVICE_NAME": "svc-a", "DEPLOYMENT_ENVIRONMENT": "production",
		"OTEL_RESOURCE_ATTRIBUTES": "team=payments, note=a%2Cb",
		"OTEL_TRACES_SAMPLER":      "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25",
	}))
	c := r.Telemetry()
	if r.Err() != nil || c.ServiceName != "svc-a" || c.Environment != "production" || c.Sampler != "parentbased_traceidratio" ||
		c.SamplerArg != "0.25" || len(c.ResourceAttributes) != 2 || c.ResourceAttributes[1].Value.AsString() != "a,b" {
		t.Fatalf("%+v, %v", c, r.Err())
	}
}

func TestTelemetryRefusesBadValues(t *testing.T) {
	r := NewReader(env(map[string]string{
		"OTEL_TRACES_SAMPLER":         "sometimes",
		"OTEL_RESOURCE_ATTRIBUTES":    "novalue",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318",
	}))
	r.Telemetry()
	err := r.Err()
	for _, want := range []string{"OTEL_TRACES_SAMPLER", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	r = NewReader(env(map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}))
	r.Telemetry()
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER_ARG") {
		t.Errorf("a ratio of 2: %v", err)
	}
	r = NewReader(env(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}))
	r.Telemetry()
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Errorf("exporter zipkin: %v", err)
	}
}

func TestMetricsAddr(t *testing.T) {
	for _, tc := range []struct{ listener, set, want string }{
		{"127.0.0.1:8094", "", "127.0.0.1:9094"},
		{"0.0.0.0:8081", "", "0.0.0.0:9081"},
		{"127.0.0.1:0", "", "127.0.0.1:0"},
		{":8093", "", ":9093"},
		{"127.0.0.1:8094", "10.0.0.5:9100", "10.0.0.5:9100"},
	} {
		r := NewReader(env(map[string]string{"METRICS_ADDR": tc.set}))
		if got := r.MetricsAddr(tc.listener); got != tc.want || r.Err() != nil {
			t.Errorf("MetricsAddr(%q) with METRICS_ADDR=%q = %q, %v; want %q", tc.listener, tc.set, got, r.Err(), tc.want)
		}
	}
	r := NewReader(env(nil))
	r.MetricsAddr("127.0.0.1:65000")
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "METRICS_ADDR") {
		t.Errorf("no default above port 64535: %v", err)
	}
}
