package http

import (
	"strings"
	"testing"
	"time"

	"rentalplatform/api"
	"rentalplatform/api/contract"
	"rentalplatform/gateway/internal/adapters/upstream"
)

func testServices(t *testing.T) Services {
	t.Helper()
	mk := func(name string) *upstream.Upstream {
		u, err := upstream.New(upstream.Config{Name: name, URL: "http://127.0.0.1:1", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	return Services{Verification: mk("verification"), Collections: mk("collections"), Payments: mk("payments"), Webhooks: mk("webhooks")}
}

func TestMatch(t *testing.T) {
	s := testServices(t)
	for _, tc := range []struct {
		path    string
		service string // "" = not routed
		upload  bool
	}{
		{"/v1/verification_sessions", "verification", false},
		{"/v1/verification_sessions/vs_1/cancel", "verification", false},
		{"/v1/verification_reports/vr_1", "verification", false},
		{"/v1/collection_cases", "collections", false},
		{"/v1/collection_cases/ref/CC-2024-0001", "collections", false},
		{"/v1/collection_cases/dc_0190a0b0-0000-7000-8000-000000000000/files", "collections", true},
		{"/v1/collection_cases/dc_1/files/file_1", "collections", false},
		{"/v1/collection_cases//files", "", false},
		{"/v1/payment_requests/bulk", "payments", false},
		{"/v1/payment_agreements/pa_1", "payments", false},
		{"/v1/webhook_endpoints", "webhooks", false},
		{"/v1/webhook_endpoints/", "webhooks", false},
		{"/v1/events/evt_1", "webhooks", false},
		{"/v1/webhook_deliveries", "webhooks", false},
		{"/v1/test_helpers/verification_sessions/vs_1/approve", "verification", false},
		{"/v1/test_helpers/payment_requests/preq_1/fail", "payments", false},
		{"/v1/test_helpers/collection_cases/dc_1/files", "collections", false},
		{"/v1/test_helpers/charges/ch_1", "", false},
		{"/v1/test_helpers", "", false},
		{"/v1/eventsfoo", "", false},
		{"/v1/", "", false},
		{"/v1", "", false},
		{"/", "", false},
		{"/v2/events", "", false},
		{"/V1/events", "", false},
		{"/v1/customers", "", false},
		{"/v1/events/../webhook_endpoints", "", false},
		{"/v1/events/./evt_1", "", false},
		{"/v1/events//evt_1", "", false},
		{"/v1/events/evt%5F1", "", false},
		{"/v1/events/evt 1", "", false},
		{"/v1/events/evt_1;x", "", false},
	} {
		rt, ok := s.match(tc.path)
		got := ""
		if ok {
			got = rt.service.Name()
		}
		if got != tc.service || rt.upload != tc.upload {
			t.Errorf("match(%q) = %q upload=%v, want %q upload=%v", tc.path, got, rt.upload, tc.service, tc.upload)
		}
	}
}

func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		header string
		token  string
		ok     bool
	}{
		{"Bearer sk_test_x", "sk_test_x", true},
		{"bearer sk_test_x", "sk_test_x", true},
		{"BEARER  sk_test_x ", "sk_test_x", true},
		{"Bearer ", "", false},
		{"Bearer", "", false},
		{"Basic c2tfdGVzdF94Og==", "", false},
		{"sk_test_x", "", false},
		{"", "", false},
		{"Bearersk_test_x", "", false},
	} {
		tok, ok := bearer([]byte(tc.header))
		if tok != tc.token || ok != tc.ok {
			t.Errorf("bearer(%q) = %q, %v; want %q, %v", tc.header, tok, ok, tc.token, tc.ok)
		}
	}
}

func TestRouteNames(t *testing.T) {
	n := newRouteNames()
	for path, want := range map[string]string{
		"/v1/webhook_endpoints":                               "/v1/webhook_endpoints",
		"/v1/webhook_endpoints/":                              "/v1/webhook_endpoints",
		"/v1/webhook_endpoints/we_1":                          "/v1/webhook_endpoints/:id",
		"/v1/webhook_endpoints/we_1/":                         "/v1/webhook_endpoints/:id",
		"/v1/webhook_endpoints/we_1/x/y":                      "/v1/webhook_endpoints/*",
		"/v1/payment_requests/bulk":                           "/v1/payment_requests/bulk",
		"/v1/payment_requests/preq_1/cancel":                  "/v1/payment_requests/:id/cancel",
		"/v1/collection_cases/ref/R-1":                        "/v1/collection_cases/ref/:reference",
		"/v1/collection_cases/dc_1/files":                     "/v1/collection_cases/:id/files",
		"/v1/collection_cases/dc_1/files/file_1/content":      "/v1/collection_cases/:id/files/:file_id/content",
		"/v1/events/evt_1/deliveries":                         "/v1/events/:id/deliveries",
		"/v1/test_helpers/payment_requests/preq_1/advance":    "/v1/test_helpers/payment_requests/:id/advance",
		"/v1/test_helpers/verification_sessions/vs_1/advance": "/v1/test_helpers/verification_sessions/:id/advance",
		"/v1/test_helpers/payment_requests/preq_1/adv":        "/v1/test_helpers/payment_requests/*",
		"/v1/verification_sessions/vs_1/advance":              "/v1/verification_sessions/*",
		"/v1/test_helpers":                                    "unmatched",
		"/v1/nothing/x":                                       "unmatched",
		"/v2/webhook_endpoints":                               "unmatched",
		"/healthz":                                            "unmatched",
	} {
		if got := n.of(path); got != want {
			t.Errorf("route of %s = %q, want %q", path, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { n.of("/v1/collection_cases/dc_1/files/file_1/content") }); allocs != 0 {
		t.Errorf("naming a route allocates %.0f times", allocs)
	}
}

// The routes the gateway names (routeTemplates) are the contract's paths under /v1/, both ways:
// a route the services add is documented and named, and the document holds no path nothing
// routes. The services' own tests compare their route tables, methods included, with it.
func TestRouteTemplatesAreTheContracts(t *testing.T) {
	ops, err := contract.Operations(api.PublicJSON())
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, o := range ops {
		// The gateway's own documents are served, not routed.
		if strings.HasPrefix(o.Path, apiPrefix) && o.Path != "/v1/openapi.json" {
			documented[o.Path] = true
		}
	}
	named := map[string]bool{}
	for _, tpl := range routeTemplates {
		segs := strings.Split(tpl, "/")
		for i, s := range segs {
			if name, ok := strings.CutPrefix(s, ":"); ok {
				segs[i] = "{" + name + "}"
			}
		}
		named[strings.Join(segs, "/")] = true
	}
	for p := range documented {
		if !named[p] {
			t.Errorf("the contract's %s is not in routeTemplates", p)
		}
	}
	for p := range named {
		if !documented[p] {
			t.Errorf("routeTemplates' %s is not in the contract", p)
		}
	}
}
