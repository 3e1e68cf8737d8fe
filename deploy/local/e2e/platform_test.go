package e2e

import (
	"bytes"
	"net/http"
	"testing"

	"rentalplatform/api"
)

// The gateway's own operations: the contract and its reference page (no key, cacheable), the
// admin API's contract (with the admin token), and the health checks.
func TestPlatformDocuments(t *testing.T) {
	p := start(t)
	for _, d := range []struct {
		url, token, contentType string
		body                    []byte
	}{
		{p.GatewayURL + "/v1/openapi.json", "", "application/json; charset=utf-8", api.PublicJSON()},
		{p.GatewayURL + "/docs", "", "text/html; charset=utf-8", api.Reference()},
		{p.AdminURL + "/admin/openapi.json", p.AdminToken, "application/json; charset=utf-8", api.AdminJSON()},
	} {
		res := callRaw(t, "GET", d.url, d.token, "", nil)
		if res.Status != http.StatusOK || res.Header.Get("Content-Type") != d.contentType || !bytes.Equal(res.Raw, d.body) {
			t.Fatalf("GET %s: %d %q, %d bytes, want the embedded %d", d.url, res.Status, res.Header.Get("Content-Type"), len(res.Raw), len(d.body))
		}
		again := callRaw(t, "GET", d.url, d.token, "", map[string]string{"If-None-Match": res.Header.Get("ETag")})
		if again.Status != http.StatusNotModified || len(again.Raw) != 0 {
			t.Fatalf("GET %s with its ETag: %d, %d bytes", d.url, again.Status, len(again.Raw))
		}
	}
	wantErr(t, callRaw(t, "GET", p.AdminURL+"/admin/openapi.json", "", "", nil), http.StatusUnauthorized, "admin_token_invalid", "")
	for _, u := range []string{"/healthz", "/readyz"} {
		if res := callRaw(t, "GET", p.GatewayURL+u, "", "", nil); res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, res.Status, res.Raw)
		}
	}
	// An operation that takes no query parameters refuses one by name, as a list refuses one
	// it does not take.
	for _, u := range []string{"/v1/webhook_endpoints/we_01kaj2c8v6f3q9ysq7m2d0w1xz?expand=url", "/v1/payment_requests/preq_01kaj2c8v6f3q9ysq7m2d0w1xz?expand=charges"} {
		wantErr(t, callRaw(t, "GET", p.GatewayURL+u, p.DevAPIKey, "", nil), http.StatusBadRequest, "parameter_unknown", "expand")
	}
	wantErr(t, callRaw(t, "POST", p.GatewayURL+"/v1/payment_requests?amount=1", p.DevAPIKey, "{}", nil), http.StatusBadRequest, "parameter_unknown", "amount")
}
