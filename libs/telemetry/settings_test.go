package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric"
)

func TestNewSampler(t *testing.T) {
	for _, tc := range []struct {
		name, arg, want string
	}{
		{"", "", "ParentBased{root:AlwaysOnSampler"},
		{"always_on", "", "AlwaysOnSampler"},
		{"always_off", "", "AlwaysOffSampler"},
		{"traceidratio", "0.5", "TraceIDRatioBased{0.5}"},
		{"parentbased_traceidratio", "0.1", "ParentBased{root:TraceIDRatioBased{0.1}"},
		{"parentbased_always_off", "", "ParentBased{root:AlwaysOffSampler"},
	} {
		s, err := NewSampler(tc.name, tc.arg)
		if err != nil || !strings.HasPrefix(s.Description(), tc.want) {
			t.Errorf("NewSampler(%q, %q) = %v, %v; want %s…", tc.name, tc.arg, s, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"jaeger_remote", ""}, {"traceidratio", "1.5"}, {"traceidratio", "half"}} {
		if _, err := NewSampler(bad[0], bad[1]); err == nil {
			t.Errorf("NewSampler(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestParseResourceAttributes(t *testing.T) {
	attrs, err := ParseResourceAttributes(" service.namespace=rental , k8s.pod.name=api%2C1 ,,note=a%20b")
	if err != nil || len(attrs) != 3 || attrs[0].Value.AsString() != "rental" || attrs[1].Value.AsString() != "api,1" ||
		string(attrs[2].Key) != "note" || attrs[2].Value.AsString() != "a b" {
		t.Fatalf("%v, %v", attrs, err)
	}
	for _, bad := range []string{"novalue", "=x", "k=%zz"} {
		if _, err := ParseResourceAttributes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The process's metrics are served in the Prometheus text format with the service's name on
// every series, its resource in target_info, and the Go runtime's own.
func TestMetricsHandler(t *testing.T) {
	ctx := context.Background()
	tel, err := Setup(ctx, Config{ServiceName: "svc-x", Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	c, err := tel.MeterProvider.Meter("test").Int64Counter("things.done")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(ctx, 3, metric.WithAttributes())
	rec := httptest.NewRecorder()
	tel.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`things_done_total{service_name="svc-x"} 3`,
		`target_info{deployment_environment_name="test",`,
		`service_version="` + Version() + `"`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the scrape has no %q:\n%s", want, body)
		}
	}
}
