package http

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

func TestHostedPageTable(t *testing.T) {
	s := testServices(t)
	p := &public{hosted: hostedPages(s)}
	names := newRouteNames()
	for _, tc := range []struct {
		path, service, route string
	}{
		{"/verify/vs_1", "verification", "/verify/:id"},
		{"/portal/wps_1/events", "webhooks", "/portal/:id"},
		{"/portal", "", routeUnmatched},
		{"/verify/", "verification", "/verify/:id"}, // routed to the page's handling, which refuses it
		{"/verify", "", routeUnmatched},
		{"/verifyx/vs_1", "", routeUnmatched},
		{"/v1/verify/vs_1", "", routeUnmatched},
		{"/v1/verification_sessions/vs_1", "", "/v1/verification_sessions/:id"},
	} {
		h, ok := p.hostedPage(tc.path)
		if got := ""; ok {
			got = h.service.Name()
			if got != tc.service {
				t.Errorf("%s: %s, want %s", tc.path, got, tc.service)
			}
		} else if tc.service != "" {
			t.Errorf("%s: not a hosted page, want %s", tc.path, tc.service)
		}
		if got := p.routeName(tc.path, names); got != tc.route {
			t.Errorf("%s: route %q, want %q", tc.path, got, tc.route)
		}
	}
}

// hostedFake is the service behind a hosted page: it verifies the gateway's signature as a
// service does and records what reached it.
type hostedFake struct {
	mu   sync.Mutex
	got  []hostedSeen
	code int // answered status; 200 when 0
}

type hostedSeen struct {
	id                                     identity.Identity
	method, path, query, body, ctype, auth string
}

func (f *hostedFake) seen() []hostedSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]hostedSeen(nil), f.got...)
}

// hostedLimits counts failed authentications and refuses what it is told to.
type hostedLimits struct {
	mu         sync.Mutex
	failures   int
	blocked    bool
	overBudget bool
}

func (l *hostedLimits) RateLimit(context.Context, domain.Key, domain.Access) (app.RateDecision, bool) {
	return app.RateDecision{}, false
}

func (l *hostedLimits) Blocked(netip.Addr) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 30 * time.Second, l.blocked
}

func (l *hostedLimits) AuthFailed(context.Context, netip.Addr) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures++
	return 0, false
}

func (l *hostedLimits) HostedRateLimit(context.Context, netip.Addr) (app.RateDecision, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.overBudget {
		return app.RateDecision{RetryAfter: 20 * time.Second}, true
	}
	return app.RateDecision{Allowed: true}, true
}

func (l *hostedLimits) counted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures
}

type noKeys struct{}

func (noKeys) Authenticate(context.Context, string) (domain.Key, error) {
	return domain.Key{}, app.ErrUnauthenticated
}

// A hosted page is forwarded without a key, signed with the hosted-page identity, to the
// service of its prefix; the gateway's own refusals on it are HTML pages.
func TestHostedPageForward(t *testing.T) {
	signer, err := identity.NewSigner([]byte(strings.Repeat("s", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	fake := &hostedFake{}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := signer.Verify(r.Header.Get, r.Method, r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		fake.mu.Lock()
		fake.got = append(fake.got, hostedSeen{id: id, method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, body: string(body),
			ctype: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization")})
		code := fake.code
		fake.mu.Unlock()
		if code == 0 {
			code = http.StatusOK
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "<p>page</p>")
	}))
	defer svc.Close()
	verification, err := upstream.New(upstream.Config{Name: "verification", URL: svc.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	down, err := upstream.New(upstream.Config{Name: "down", URL: "http://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	limits := &hostedLimits{}
	gen := ids.NewGenerator(nil)
	newGateway := func(s Services) string {
		app := NewPublic(PublicConfig{
			Logger: slog.New(slog.DiscardHandler), Keys: noKeys{}, Limits: limits, HostedLimits: limits, Signer: signer,
			Services: s, BodyLimit: 1 << 10, UploadBodyLimit: 1 << 20, IDs: gen,
		})
		return "http://" + listen(t, app).Addr
	}
	base := newGateway(Services{Verification: verification, Collections: down, Payments: down, Webhooks: down})
	send := func(method, path, ctype, body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	// GET, no key: forwarded with its query, signed as a hosted page; a forged identity and an
	// Authorization header do not pass.
	resp, body := send("GET", "/verify/vs_1?client_secret=vs_1_secret_abc", "", "",
		map[string]string{identity.HeaderAccount: "acct_forged", "Authorization": "Bearer sk_test_x"})
	seen := fake.seen()
	if resp.StatusCode != 200 || body != "<p>page</p>" || len(seen) != 1 {
		t.Fatalf("GET: %d %q, %d forwarded", resp.StatusCode, body, len(seen))
	}
	if s := seen[0]; !s.id.Hosted() || s.id.Livemode || s.id.RequestID != resp.Header.Get("Request-Id") || s.method != "GET" ||
		s.path != "/verify/vs_1" || s.query != "client_secret=vs_1_secret_abc" || s.auth != "" {
		t.Fatalf("the service got %+v (answer Request-Id %s)", s, resp.Header.Get("Request-Id"))
	}
	if resp.Header.Get("Content-Security-Policy") != "default-src 'none'" || !strings.HasPrefix(resp.Header.Get("Request-Id"), "req_") {
		t.Fatalf("the page's headers were not passed on: %v", resp.Header)
	}

	// POST: the form body; HEAD: asked as a GET.
	if resp, _ := send("POST", "/verify/vs_1", "application/x-www-form-urlencoded", "client_secret=s&outcomes%5Bcredit%5D=passed", nil); resp.StatusCode != 200 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	if resp, _ := send("HEAD", "/verify/vs_1", "", "", nil); resp.StatusCode != 200 {
		t.Fatalf("HEAD: %d", resp.StatusCode)
	}
	seen = fake.seen()
	if s := seen[1]; s.method != "POST" || s.body != "client_secret=s&outcomes%5Bcredit%5D=passed" || s.ctype != "application/x-www-form-urlencoded" || !s.id.Hosted() {
		t.Fatalf("POST reached the service as %+v", s)
	}
	if seen[2].method != "GET" {
		t.Fatalf("HEAD reached the service as %s", seen[2].method)
	}

	// Not a page, or not a method a page takes: the envelope, nothing forwarded.
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/verify/", 404, "route_missing"},
		{"GET", "/verify//vs_1", 404, "route_missing"},
		{"GET", "/verify/%2e%2e/v1/events", 404, "route_missing"},
		{"PUT", "/verify/vs_1", 405, "method_not_allowed"},
	} {
		resp, body := send(c.method, c.path, "", "", nil)
		var env struct{ Error struct{ Code string } }
		_ = json.Unmarshal([]byte(body), &env)
		if resp.StatusCode != c.status || env.Error.Code != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, resp.StatusCode, body, c.status, c.code)
		}
	}
	if n := len(fake.seen()); n != 3 {
		t.Fatalf("%d requests reached the service, want 3", n)
	}

	// The page's 404 counts as a failed authentication of the address.
	fake.mu.Lock()
	fake.code = http.StatusNotFound
	fake.mu.Unlock()
	before := limits.counted()
	if resp, _ := send("GET", "/verify/vs_1?client_secret=wrong", "", "", nil); resp.StatusCode != 404 || limits.counted() != before+1 {
		t.Fatalf("a 404 page: %d, %d failures counted", resp.StatusCode, limits.counted()-before)
	}

	// The gateway's own answers are HTML pages with the hosted headers.
	wantPage := func(name string, resp *http.Response, body string, status int) {
		t.Helper()
		if resp.StatusCode != status || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
			resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Referrer-Policy") != "no-referrer" ||
			resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
			!strings.Contains(body, `<html lang="en">`) || !strings.Contains(body, resp.Header.Get("Request-Id")) {
			t.Errorf("%s: %d %v\n%s", name, resp.StatusCode, resp.Header, body)
		}
	}
	resp, body = send("POST", "/verify/vs_1", "application/x-www-form-urlencoded", strings.Repeat("x", 2<<10), nil)
	wantPage("a body over the limit", resp, body, 413)
	limits.mu.Lock()
	limits.overBudget = true
	limits.mu.Unlock()
	resp, body = send("GET", "/verify/vs_1?client_secret=s", "", "", nil)
	wantPage("over the hosted budget", resp, body, 429)
	if resp.Header.Get("Retry-After") != "20" {
		t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	limits.mu.Lock()
	limits.overBudget, limits.blocked = false, true
	limits.mu.Unlock()
	resp, body = send("GET", "/verify/vs_1?client_secret=s", "", "", nil)
	wantPage("a blocked address", resp, body, 429)
	limits.mu.Lock()
	limits.blocked = false
	limits.mu.Unlock()

	// The API still needs a key.
	if resp, _ := send("GET", "/v1/verification_sessions/vs_1", "", "", nil); resp.StatusCode != 401 {
		t.Fatalf("the API without a key: %d", resp.StatusCode)
	}

	// The service unreachable: 502, as a page.
	base = newGateway(Services{Verification: down, Collections: down, Payments: down, Webhooks: down})
	resp, body = send("GET", "/verify/vs_1?client_secret=s", "", "", nil)
	wantPage("the service unreachable", resp, body, 502)
}
