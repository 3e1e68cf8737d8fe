package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"rentalplatform/api"
)

// The contract and its reference page are served to anyone, cacheable, and answered 304 when
// the client's copy is current; the admin API's contract only with the admin token.
func TestDocuments(t *testing.T) {
	s := startStack(t, nil)
	for _, d := range []struct {
		url, contentType string
		body             []byte
		header           map[string]string
	}{
		{s.public + "/v1/openapi.json", "application/json; charset=utf-8", api.PublicJSON(), nil},
		{s.public + "/docs", "text/html; charset=utf-8", api.Reference(), nil},
		{s.admin + "/admin/openapi.json", "application/json; charset=utf-8", api.AdminJSON(), bearer(testAdminToken)},
	} {
		r := do(t, http.MethodGet, d.url, nil, d.header)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != d.contentType || !bytes.Equal(r.body, d.body) {
			t.Fatalf("GET %s: %d %q, %d bytes (want %d)", d.url, r.status, r.header.Get("Content-Type"), len(r.body), len(d.body))
		}
		etag := r.header.Get("ETag")
		if len(etag) != 66 || r.header.Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("GET %s: ETag %q, Cache-Control %q", d.url, etag, r.header.Get("Cache-Control"))
		}
		for _, inm := range []string{etag, `"other", W/` + etag, "*"} {
			h := map[string]string{"If-None-Match": inm}
			for k, v := range d.header {
				h[k] = v
			}
			if r := do(t, http.MethodGet, d.url, nil, h); r.status != http.StatusNotModified || len(r.body) != 0 || r.header.Get("ETag") != etag {
				t.Fatalf("GET %s with If-None-Match %s: %d, %d bytes, ETag %q", d.url, inm, r.status, len(r.body), r.header.Get("ETag"))
			}
		}
		h := map[string]string{"If-None-Match": `"stale"`}
		for k, v := range d.header {
			h[k] = v
		}
		if r := do(t, http.MethodGet, d.url, nil, h); r.status != http.StatusOK || !bytes.Equal(r.body, d.body) {
			t.Fatalf("GET %s with a stale ETag: %d", d.url, r.status)
		}
	}
	var doc struct {
		OpenAPI string
		Info    struct{ Version string }
	}
	if err := json.Unmarshal(api.PublicJSON(), &doc); err != nil || doc.OpenAPI != "3.1.0" || doc.Info.Version == "" {
		t.Fatalf("the public document: %v %+v", err, doc)
	}
	do(t, http.MethodGet, s.admin+"/admin/openapi.json", nil, nil).expectError(t, http.StatusUnauthorized, "authentication_error", "admin_token_invalid")
}
