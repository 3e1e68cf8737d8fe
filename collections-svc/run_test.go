package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/servicetest"
)

const testSecret = "component-test-internal-auth-secret-0123456789"

// TestBoots runs the service through run() on a free port against the embedded store.
func TestBoots(t *testing.T) {
	t.Parallel()
	m := testkit.Mongo(t)
	p := servicetest.Start(t, run, map[string]string{
		"HTTP_ADDR":            "127.0.0.1:0",
		"MONGODB_URI":          m.URI,
		"MONGODB_DATABASE":     m.Database,
		"INTERNAL_AUTH_SECRET": testSecret,
	}, "http")
	signer, err := identity.NewSigner([]byte(testSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, sign bool) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("GET", p.URL("http")+path, nil)
		if sign {
			signer.Sign(req.Header.Set, identity.Identity{Account: "acct_test", RequestID: "req_test"}, "GET", path)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("GET %s: %d, not JSON: %s", path, res.StatusCode, raw)
		}
		return res.StatusCode, body
	}
	wantError := func(path string, sign bool, status int, typ, code string) {
		t.Helper()
		got, body := get(path, sign)
		e, _ := body["error"].(map[string]any)
		if got != status || e["type"] != typ || e["code"] != code {
			t.Fatalf("GET %s (signed %v): %d %v; want %d %s/%s", path, sign, got, body, status, typ, code)
		}
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := get(path, false); status != 200 {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
	}
	wantError("/v1/anything", false, 401, "authentication_error", "internal_identity_invalid")
	wantError("/v1/anything", true, 404, "invalid_request_error", "route_missing")
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"INTERNAL_AUTH_SECRET": "short", "LOG_LEVEL": "loud"}
	err := run(t.Context(), func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "INTERNAL_AUTH_SECRET") || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Fatalf("run = %v; want an error naming every bad variable", err)
	}
}
