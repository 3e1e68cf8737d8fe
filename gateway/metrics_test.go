package main

import (
	"net/http"
	"strings"
	"testing"

	"rentalplatform/libs/servicetest"
)

// The gateway's metrics: requests of both API listeners by route and status, on a listener of
// their own (beside the admin listener unless METRICS_ADDR says otherwise), never on the API
// listeners.
func TestMetrics(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	key := s.createKey(t, "acct_metrics", false)
	for _, r := range []struct {
		method, path, body, key string
		status                  int
	}{
		{"POST", "/v1/webhook_endpoints", `{}`, *key.Secret, http.StatusOK},
		{"POST", "/v1/webhook_endpoints", `{}`, *key.Secret, http.StatusOK},
		{"GET", "/v1/webhook_endpoints/we_1", "", *key.Secret, http.StatusOK},
		{"GET", "/v1/nothing_here", "", *key.Secret, http.StatusNotFound},
		{"GET", "/v1/webhook_endpoints", "", "sk_test_wrong", http.StatusUnauthorized},
	} {
		res := do(t, r.method, s.public+r.path, strings.NewReader(r.body), jsonHeaders(r.key))
		if res.status != r.status {
			t.Fatalf("%s %s: %d %s, want %d", r.method, r.path, res.status, res.body, r.status)
		}
	}

	m := servicetest.Scrape(t, s.metrics)
	for _, c := range []struct {
		method, route, status string
		n                     uint64
	}{
		{"POST", "/v1/webhook_endpoints", "200", 2},
		{"GET", "/v1/webhook_endpoints/:id", "200", 1},
		{"GET", "unmatched", "404", 1},
		{"GET", "/v1/webhook_endpoints", "401", 1},
		{"POST", "/admin/api_keys", "201", 1},
	} {
		h := m.Histogram(t, "http_server_request_duration_seconds", map[string]string{
			"http_request_method": c.method, "http_route": c.route, "http_response_status_code": c.status, "service_name": "gateway",
		})
		if h.GetSampleCount() != c.n || h.GetSampleSum() <= 0 {
			t.Errorf("%s %s %s: %d requests, %gs; want %d", c.method, c.route, c.status, h.GetSampleCount(), h.GetSampleSum(), c.n)
		}
	}
	for _, l := range []string{"public", "admin"} {
		if v := m.Gauge(t, "http_server_active_requests", map[string]string{"listener": l}); v != 0 {
			t.Errorf("%s: %v requests in flight at rest", l, v)
		}
	}
	for _, u := range []string{s.public + "/metrics", s.admin + "/metrics"} {
		if r := do(t, "GET", u, nil, nil); r.status == http.StatusOK || strings.Contains(string(r.body), "http_server") {
			t.Errorf("GET %s: %d; the metrics are served on an API listener", u, r.status)
		}
	}
}

// The metrics listener is derived from the admin listener, never the public one; the OTEL_*
// settings are read with the rest and refused with the rest.
func TestMetricsConfig(t *testing.T) {
	env := map[string]string{
		"ADMIN_TOKEN": testAdminToken, "INTERNAL_AUTH_SECRET": testSecret,
		"GATEWAY_ADDR": "0.0.0.0:443", "ADMIN_ADDR": "10.0.0.7:8081",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SERVICE_NAME": "edge",
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MetricsAddr != "10.0.0.7:9081" || cfg.Telemetry.TracesEndpoint != "http://collector:4318/v1/traces" || cfg.Telemetry.ServiceName != "edge" {
		t.Fatalf("METRICS_ADDR %q, traces endpoint %q, service name %q", cfg.MetricsAddr, cfg.Telemetry.TracesEndpoint, cfg.Telemetry.ServiceName)
	}
	env["METRICS_ADDR"] = "127.0.0.1:9400"
	env["OTEL_TRACES_SAMPLER"] = "often"
	_, err = loadConfig(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER") {
		t.Fatalf("a bad sampler: %v", err)
	}
	delete(env, "OTEL_TRACES_SAMPLER")
	if cfg, err = loadConfig(func(k string) string { return env[k] }); err != nil || cfg.MetricsAddr != "127.0.0.1:9400" {
		t.Fatalf("METRICS_ADDR set: %q, %v", cfg.MetricsAddr, err)
	}
}
