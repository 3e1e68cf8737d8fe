package main

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// The webhook portal through run(): POST /v1/webhook_portal_sessions with an API caller's
// identity, then its pages (/portal/…) as the gateway forwards a browser's requests, signed
// with the hosted-page identity. Expiry is covered with an injected clock in internal/app.

type page struct {
	status int
	header http.Header
	body   string
}

// hosted sends a browser's request for a portal page; form nil sends a GET.
func (s *instance) hosted(t *testing.T, method, target, cookie string, form url.Values) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.url+target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.Header.Set("Cookie", "portal_token="+cookie)
	}
	req.Header.Set("X-Forwarded-Proto", "https")
	s.signer.Sign(req.Header.Set, identity.Identity{Account: identity.HostedAccount, RequestID: s.ids.New(ids.Request)}, method, req.URL.Path)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header, string(raw)}
}

// portalSession creates a session through the API, as the gateway forwards it (with the
// public address the client used).
func (c *client) portalSession(body string) response {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.svc.url+"/v1/webhook_portal_sessions", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-Host", "api.example.test:8443")
	req.Header.Set("X-Forwarded-Proto", "https")
	c.svc.signer.Sign(req.Header.Set, identity.Identity{Account: c.account, Livemode: c.livemode, RequestID: c.svc.ids.New(ids.Request)}, "POST", req.URL.Path)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		c.t.Fatalf("not JSON: %s", raw)
	}
	return out
}

var portalURL = regexp.MustCompile(`^https://api\.example\.test:8443/portal/(wps_[0-9a-z]{26})\?token=(wpst_[0-9A-Za-z]{43})$`)

func TestPortalSessionsAPI(t *testing.T) {
	t.Parallel()
	svc := start(t)
	c := svc.client(t)
	ep := c.create(validBody).str("id")
	before := time.Now().Unix()

	r := c.portalSession(`{"endpoint":"` + ep + `","access":"read_write","return_url":"https://shop.example.com/webhooks"}`).wantOK(t)
	m := portalURL.FindStringSubmatch(r.str("url"))
	if m == nil || r.str("id") != m[1] || r.body["object"] != "webhook_portal_session" || r.body["livemode"] != false ||
		r.str("endpoint") != ep || r.str("access") != "read_write" || r.str("return_url") != "https://shop.example.com/webhooks" {
		t.Fatalf("session %s", r.raw)
	}
	created, _ := r.body["created"].(float64)
	expires, _ := r.body["expires_at"].(float64)
	if int64(created) < before || expires != created+3600 {
		t.Fatalf("created %v expires_at %v", created, expires)
	}
	if d := c.portalSession(``).wantOK(t); d.body["endpoint"] != nil || d.str("access") != "read_only" || d.body["return_url"] != nil {
		t.Fatalf("defaults: %s", d.raw)
	}

	c.portalSession(`{"access":"admin"}`).wantError(t, 400, "invalid_request_error", "parameter_invalid", "access")
	c.portalSession(`{"return_url":"http://shop.example.com"}`).wantError(t, 400, "invalid_request_error", "url_not_https", "return_url")
	c.portalSession(`{"endpoint":"we_nope"}`).wantError(t, 404, "invalid_request_error", "resource_missing", "endpoint")
	c.otherMode().portalSession(`{"endpoint":"`+ep+`"}`).wantError(t, 404, "invalid_request_error", "resource_missing", "endpoint")
	svc.client(t).portalSession(`{"endpoint":"`+ep+`"}`).wantError(t, 404, "invalid_request_error", "resource_missing", "endpoint")
	c.portalSession(`{"scope":"all"}`).wantError(t, 400, "invalid_request_error", "parameter_unknown", "scope")

	// WEBHOOKS_PORTAL_BASE_URL, when set, is the links' base.
	based := start(t, "WEBHOOKS_PORTAL_BASE_URL", "https://portal.example.com/").client(t)
	if u := based.portalSession(``).wantOK(t).str("url"); !strings.HasPrefix(u, "https://portal.example.com/portal/wps_") {
		t.Fatalf("url with the configured base: %s", u)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

func TestPortalPages(t *testing.T) {
	t.Parallel()
	svc := start(t)
	c := svc.client(t)
	ep := c.create(`{"url":"https://example.invalid/hooks","enabled_events":["*"]}`).str("id")
	ep2 := c.create(validBody).str("id")
	rw := portalURL.FindStringSubmatch(c.portalSession(`{"access":"read_write"}`).wantOK(t).str("url"))
	ro := portalURL.FindStringSubmatch(c.portalSession(`{"endpoint":"` + ep + `"}`).wantOK(t).str("url"))
	other := portalURL.FindStringSubmatch(svc.client(t).portalSession(``).wantOK(t).str("url"))
	id, token := rw[1], rw[2]

	// The link: the token moves into the cookie, and the browser to the address without it.
	enter := svc.hosted(t, "GET", "/portal/"+id+"?token="+token, "", nil)
	cookie := enter.header.Get("Set-Cookie")
	if enter.status != 303 || enter.header.Get("Location") != "/portal/"+id || enter.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the link: %d %v", enter.status, enter.header)
	}
	for _, want := range []string{"portal_token=" + token, "path=/portal/" + id, "HttpOnly", "SameSite=Lax", "secure"} {
		if !strings.Contains(strings.ToLower(cookie), strings.ToLower(want)) {
			t.Fatalf("Set-Cookie %q lacks %s", cookie, want)
		}
	}
	if ma := regexp.MustCompile(`max-age=(\d+)`).FindStringSubmatch(strings.ToLower(cookie)); ma == nil || ma[1] < "3590" || len(ma[1]) != 4 {
		t.Fatalf("Set-Cookie %q: max-age is not the remaining hour", cookie)
	}

	overview := svc.hosted(t, "GET", "/portal/"+id, token, nil)
	if overview.status != 200 || !strings.Contains(overview.body, "/portal/"+id+"/endpoints/"+ep) || !strings.Contains(overview.body, "/portal/"+id+"/endpoints/"+ep2) ||
		!strings.Contains(overview.header.Get("Content-Security-Policy"), "form-action 'self'") || overview.header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("overview: %d %v\n%s", overview.status, overview.header, overview.body)
	}
	if strings.Contains(overview.body, token) {
		t.Fatal("a page shows the token")
	}
	endpointPage := svc.hosted(t, "GET", "/portal/"+id+"/endpoints/"+ep, token, nil)
	m := csrfField.FindStringSubmatch(endpointPage.body)
	if endpointPage.status != 200 || m == nil || !strings.Contains(endpointPage.body, "Disable the endpoint") {
		t.Fatalf("endpoint page: %d\n%s", endpointPage.status, endpointPage.body)
	}
	csrf := m[1]
	if p := svc.hosted(t, "GET", "/portal/"+id+"/events", token, nil); p.status != 200 || !strings.Contains(p.body, "Recent events") {
		t.Fatalf("events page: %d", p.status)
	}

	// Actions: without the CSRF value 403; with it, done, and back with a notice.
	if p := svc.hosted(t, "POST", "/portal/"+id+"/endpoints/"+ep+"/disable", token, url.Values{}); p.status != 403 {
		t.Fatalf("disable without csrf: %d", p.status)
	}
	// The last character changed: always "0" was the value itself once in 16 pages.
	wrong := csrf[:63] + "0"
	if wrong == csrf {
		wrong = csrf[:63] + "1"
	}
	if p := svc.hosted(t, "POST", "/portal/"+id+"/endpoints/"+ep+"/disable", token, url.Values{"csrf": {wrong}}); p.status != 403 {
		t.Fatalf("disable with a wrong csrf: %d", p.status)
	}
	if c.do("GET", "/v1/webhook_endpoints/"+ep, "").wantOK(t).str("status") != "enabled" {
		t.Fatal("refused actions changed the endpoint")
	}
	done := svc.hosted(t, "POST", "/portal/"+id+"/endpoints/"+ep+"/disable", token, url.Values{"csrf": {csrf}})
	if done.status != 303 || done.header.Get("Location") != "/portal/"+id+"/endpoints/"+ep+"?notice=disabled" {
		t.Fatalf("disable: %d %v %s", done.status, done.header, done.body)
	}
	if c.do("GET", "/v1/webhook_endpoints/"+ep, "").wantOK(t).str("status") != "disabled" {
		t.Fatal("not disabled")
	}
	rotated := svc.hosted(t, "POST", "/portal/"+id+"/endpoints/"+ep+"/rotate_secret", token, url.Values{"csrf": {csrf}})
	if rotated.status != 200 || !regexp.MustCompile(`value="whsec_[A-Za-z0-9+/]{43}="`).MatchString(html.UnescapeString(rotated.body)) {
		t.Fatalf("rotate: %d\n%s", rotated.status, rotated.body)
	}

	// The one 404, byte for byte: a wrong token, another session's, none, an unknown
	// session, the link with a wrong token, an object outside the scope or another account's.
	roID, roToken := ro[1], ro[2]
	notFound := []page{
		svc.hosted(t, "GET", "/portal/"+id, token+"x", nil),
		svc.hosted(t, "GET", "/portal/"+id, other[2], nil),
		svc.hosted(t, "GET", "/portal/"+id, "", nil),
		svc.hosted(t, "GET", "/portal/"+other[1], token, nil),
		svc.hosted(t, "GET", "/portal/"+id+"?token="+other[2], "", nil),
		svc.hosted(t, "GET", "/portal/"+roID+"/endpoints/"+ep2, roToken, nil),
		svc.hosted(t, "GET", "/portal/"+roID+"/deliveries/wd_01h00000000000000000000000", roToken, nil),
		svc.hosted(t, "POST", "/portal/"+id+"/endpoints/"+ep+"/enable", other[2], url.Values{"csrf": {csrf}}),
		svc.hosted(t, "GET", "/portal/wps_nope", token, nil),
	}
	for i, p := range notFound {
		if p.status != 404 || p.body != notFound[0].body || p.header.Get("Set-Cookie") != "" ||
			p.header.Get("Content-Security-Policy") != notFound[0].header.Get("Content-Security-Policy") {
			t.Fatalf("404 #%d: %d %v\n%s", i, p.status, p.header, p.body)
		}
	}
	if !strings.Contains(notFound[0].body, "Page not found") || strings.Contains(notFound[0].body, "wps_") {
		t.Fatalf("the 404 page: %s", notFound[0].body)
	}

	// Read-only: its one endpoint, no action form, and an action is 403.
	roPage := svc.hosted(t, "GET", "/portal/"+roID+"/endpoints/"+ep, roToken, nil)
	if roPage.status != 200 || strings.Contains(roPage.body, "<form") || !strings.Contains(roPage.body, "Read-only access") ||
		!strings.Contains(roPage.header.Get("Content-Security-Policy"), "form-action 'none'") {
		t.Fatalf("read-only page: %d\n%s", roPage.status, roPage.body)
	}
	if p := svc.hosted(t, "POST", "/portal/"+roID+"/endpoints/"+ep+"/enable", roToken, url.Values{"csrf": {csrf}}); p.status != 403 {
		t.Fatalf("read-only enable: %d", p.status)
	}

	// An API caller's identity does not open the pages (nor the hosted one the API).
	if r := c.do("GET", "/portal/"+id, ""); r.status != 401 && r.status != 403 && r.status != 404 {
		t.Fatalf("an API identity on the portal: %d %s", r.status, r.raw)
	}
}
