package fiberx

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"rentalplatform/libs/health"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"rentalplatform/libs/identity"
)

// Requests are measured by method, route and the status the client got — a request refused by
// the identity check and an internal error included — and health checks are not.
func TestServerMetrics(t *testing.T) {
	signer, err := identity.NewSigner([]byte(strings.Repeat("k", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	log := slog.New(slog.DiscardHandler)
	app := New(Config{Service: "test", Logger: log, Signer: signer,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Listener: "http"})
	health.Health(app, log)
	app.Get("/v1/things/:id", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"id": c.Params("id")}) })
	app.Get("/v1/boom", func(*fiber.Ctx) error { return context.DeadlineExceeded })
	for _, req := range []*http.Request{
		signed(signer, "GET", "/v1/things/a", ""),
		signed(signer, "GET", "/v1/things/b", ""),
		signed(signer, "GET", "/v1/boom", ""),
		httptest.NewRequest("GET", "/v1/things/c", nil), // unsigned: 401
		httptest.NewRequest("GET", "/healthz", nil),
	} {
		if _, err := app.Test(req, -1); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	var active int64 = -1
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch m.Name {
		case MetricRequestDuration:
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				route, _ := p.Attributes.Value("http.route")
				status, _ := p.Attributes.Value("http.response.status_code")
				method, _ := p.Attributes.Value("http.request.method")
				counts[method.AsString()+" "+route.AsString()+" "+status.String()] += p.Count
			}
		case MetricActiveRequests:
			p := m.Data.(metricdata.Sum[int64]).DataPoints[0]
			if l, _ := p.Attributes.Value("listener"); l.AsString() == "http" {
				active = p.Value
			}
		}
	}
	want := map[string]uint64{"GET /v1/things/:id 200": 2, "GET /v1/boom 500": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%s measured %d times, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	var refused uint64
	for k, n := range counts {
		if strings.HasSuffix(k, " 401") {
			refused += n
		}
		if strings.Contains(k, "healthz") {
			t.Errorf("a health check was measured: %s", k)
		}
	}
	if refused != 1 || active != 0 {
		t.Errorf("%d refused requests measured (want 1), %d in flight at rest", refused, active)
	}
}

// Recording a request allocates nothing once its attribute set is known: the gateway's request
// path (issue 16) pays only for the aggregation.
func TestServerMetricsRecordWithoutAllocating(t *testing.T) {
	m, err := newServerMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())), "http", nil)
	if err != nil {
		t.Fatal(err)
	}
	k := attrKey{method: KnownMethod("POST"), route: "/v1/things", status: 200}
	ctx := context.Background()
	m.duration.Record(ctx, 0.01, m.sets.Options(k)...)
	allocs := testing.AllocsPerRun(1000, func() {
		m.begin()
		m.active.Add(-1)
		m.duration.Record(ctx, float64(3*time.Millisecond)/1e9, m.sets.Options(k)...)
	})
	if allocs != 0 {
		t.Errorf("recording a request allocates %.1f times", allocs)
	}
}

// The metrics listener serves the Go profiles only when asked to (PROFILES_ENABLED).
func TestMetricsAppProfiles(t *testing.T) {
	t.Parallel()
	scrape := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("up 1\n")) })
	for _, profiles := range []bool{false, true} {
		app := MetricsApp(scrape, profiles)
		for path, want := range map[string]int{
			"/metrics":                  200,
			"/debug/pprof/heap?debug=1": map[bool]int{false: 404, true: 200}[profiles],
			"/debug/pprof/goroutine":    map[bool]int{false: 404, true: 200}[profiles],
			"/debug/pprof/":             map[bool]int{false: 404, true: 200}[profiles],
		} {
			res, err := app.Test(httptest.NewRequest(http.MethodGet, path, nil))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("profiles %v: GET %s = %d, want %d", profiles, path, res.StatusCode, want)
			}
		}
	}
}
