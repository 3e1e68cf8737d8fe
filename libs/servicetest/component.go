package servicetest

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/identity"
)

// Secret is the gateway-to-service identity secret Component starts services with.
const Secret = "component-test-internal-auth-secret-0123456789"

// Component runs the checks every service behind the gateway must pass, as parallel subtests
// of t:
//
//   - "boots": run() on 127.0.0.1:0 against a database of its own (testkit) answers /healthz and
//     /readyz with 200, refuses an unsigned request with 401 authentication_error /
//     internal_identity_invalid, answers a signed request for an unknown route with 404
//     invalid_request_error / route_missing carrying the request's id, serves its metrics on
//     its metrics listener (those two requests counted, health checks not) and nowhere else,
//     and stops cleanly;
//   - "refuses bad config": run() with several bad shared settings returns, without serving,
//     an error that names every one of them.
//
// env adds or overrides variables for both (the service's own required settings, a REDIS_URL
// from testkit.Redis, ...); nil when the shared ones suffice.
func Component(t *testing.T, run RunFunc, env map[string]string) {
	t.Helper()
	t.Run("boots", func(t *testing.T) {
		t.Parallel()
		vars := Env(t)
		maps.Copy(vars, env)
		p := Start(t, run, vars, "http", "metrics")
		signer, err := identity.NewSigner([]byte(Secret), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if status, body := get(t, p.URL("http")+path, nil); status != http.StatusOK {
				t.Errorf("GET %s: %d %s; want 200", path, status, body)
			}
		}
		const path = "/v1/no_such_resource"
		wantError(t, p.URL("http")+path, nil, http.StatusUnauthorized, "authentication_error", "internal_identity_invalid", "")
		id := identity.Identity{Account: "acct_component", RequestID: "req_component"}
		sign := func(h http.Header) { signer.Sign(h.Set, id, http.MethodGet, path) }
		wantError(t, p.URL("http")+path, sign, http.StatusNotFound, "invalid_request_error", "route_missing", id.RequestID)

		m := Scrape(t, p.URL("metrics")+"/metrics")
		for _, status := range []string{"401", "404"} {
			h := m.Histogram(t, "http_server_request_duration_seconds", map[string]string{"http_response_status_code": status, "http_request_method": "GET"})
			if h.GetSampleCount() != 1 || h.GetSampleSum() <= 0 {
				t.Errorf("requests answered %s: %d measured, %gs in all; want the 1 made", status, h.GetSampleCount(), h.GetSampleSum())
			}
		}
		for _, route := range []string{"/healthz", "/readyz"} {
			if m.Find("http_server_request_duration_seconds", map[string]string{"http_route": route}) != nil {
				t.Errorf("health checks (%s) are measured", route)
			}
		}
		if m.Find("target_info", nil) == nil || m.Find("go_goroutines", nil) == nil {
			t.Error("the metrics have no target_info or no Go runtime metrics")
		}
		if status, _ := get(t, p.URL("http")+"/metrics", nil); status == http.StatusOK {
			t.Error("the service's own listener serves /metrics")
		}
		if status, _ := get(t, p.URL("metrics")+path, nil); status != http.StatusNotFound {
			t.Errorf("the metrics listener answers %s with %d, want 404", path, status)
		}
	})
	t.Run("refuses bad config", func(t *testing.T) {
		t.Parallel()
		bad := map[string]string{"INTERNAL_AUTH_SECRET": "short", "LOG_LEVEL": "loud", "SHUTDOWN_TIMEOUT": "soon"}
		vars := maps.Clone(env)
		if vars == nil {
			vars = map[string]string{}
		}
		maps.Copy(vars, bad)
		vars["HTTP_ADDR"] = "127.0.0.1:0"
		RefusesConfig(t, run, vars, slices.Collect(maps.Keys(bad))...)
	})
}

// RefusesConfig runs run with env as its whole environment and checks that it returns, without
// serving, an error naming each of the variables bad (all of env's when none are given).
func RefusesConfig(t *testing.T, run RunFunc, env map[string]string, bad ...string) {
	t.Helper()
	if len(bad) == 0 {
		bad = slices.Collect(maps.Keys(env))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := run(ctx, func(k string) string { return env[k] }, io.Discard)
	if err == nil {
		t.Fatal("run with bad settings returned nil; want an error naming each of them")
	}
	for _, name := range bad {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("run = %v; want an error naming every bad variable, %s too", err, name)
		}
	}
}

// get fetches url, setting headers with sign when it is not nil.
func get(t *testing.T, url string, sign func(http.Header)) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sign != nil {
		sign(req.Header)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

// wantError checks the status and error envelope of GET url, and its request_id when one is
// given.
func wantError(t *testing.T, url string, sign func(http.Header), status int, typ, code, requestID string) {
	t.Helper()
	got, raw := get(t, url, sign)
	var body struct {
		Error struct {
			Type      string `json:"type"`
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET %s (signed %v): %d, not JSON: %s", url, sign != nil, got, raw)
	}
	e := body.Error
	if got != status || e.Type != typ || e.Code != code || (requestID != "" && e.RequestID != requestID) {
		t.Errorf("GET %s (signed %v): %d %s; want %d %s/%s (request_id %q)", url, sign != nil, got, raw, status, typ, code, requestID)
	}
}

// Env returns the settings every service needs to run in a test: a free port, a database of its
// own on the embedded store (or MONGODB_URI's server) and the gateway-identity secret. A service
// adds its own to the map.
func Env(t testing.TB) map[string]string {
	m := testkit.Mongo(t)
	return map[string]string{
		"HTTP_ADDR":            "127.0.0.1:0",
		"MONGODB_URI":          m.URI,
		"MONGODB_DATABASE":     m.Database,
		"INTERNAL_AUTH_SECRET": Secret,
	}
}
