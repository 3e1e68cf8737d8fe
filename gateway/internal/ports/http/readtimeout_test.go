package http

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/libs/fiberx"
)

// TestUploadReadTimeout: an upload's request gets the services' five minutes once its headers
// are in; every other request keeps the listener's minute (zero: the server's own).
func TestUploadReadTimeout(t *testing.T) {
	for _, c := range []struct {
		method, uri string
		want        time.Duration
	}{
		{"POST", "/v1/collection_cases/cc_1/files", fiberx.StreamedBodyReadTimeout},
		{"POST", "/v1/collection_cases/cc_1/files?x=1", fiberx.StreamedBodyReadTimeout},
		{"GET", "/v1/collection_cases/cc_1/files", 0},
		{"POST", "/v1/collection_cases/cc_1/close", 0},
		{"POST", "/v1/collection_cases/cc_1/files/file_1", 0},
		{"POST", "/v1/collection_cases/files", 0},
		{"POST", "/v2/collection_cases/cc_1/files", 0},
		{"POST", "/v1/payment_requests", 0},
	} {
		var h fasthttp.RequestHeader
		h.SetMethod(c.method)
		h.SetRequestURI(c.uri)
		if got := uploadReadTimeout(&h).ReadTimeout; got != c.want {
			t.Errorf("%s %s: read timeout %s, want %s", c.method, c.uri, got, c.want)
		}
	}
	if fiberx.StreamedBodyReadTimeout <= fiberx.ReadTimeout {
		t.Fatalf("an upload's timeout %s is not longer than the listener's %s", fiberx.StreamedBodyReadTimeout, fiberx.ReadTimeout)
	}
}
