package e2e

// The webhook portal (docs/hosted-pages.md, "The webhook portal") end to end: a session
// created with an API key, its link opened on the gateway's public address in headless
// Chromium, a failed delivery retried, a secret rotated and an endpoint disabled and enabled
// from the pages, with what the receiver and the API see checked; and, over plain HTTP, every
// token and object a session does not open answered with the same 404.

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"rentalplatform/deploy/local/e2e/receiver"
)

// portalLink is the url of POST /v1/webhook_portal_sessions.
var portalLink = regexp.MustCompile(`^(https?://[^/]+)/portal/(wps_[0-9a-z]{26})\?token=(wpst_[0-9A-Za-z]{43})$`)

// portalSession creates a portal session and returns its base, id and token.
func (p *platform) portalSession(t *testing.T, key string, params map[string]any) (base, id, token string) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	res := call(t, "POST", p.GatewayURL+"/v1/webhook_portal_sessions", key, params)
	m := portalLink.FindStringSubmatch(str(res.Body["url"]))
	if res.Status != 200 || m == nil || m[2] != str(res.Body["id"]) {
		t.Fatalf("portal session: %d %s", res.Status, res.Raw)
	}
	return m[1], m[2], m[3]
}

func TestWebhookPortal(t *testing.T) {
	t.Parallel()
	ctx, console := browser(t)
	// Failed attempts are retried after an hour: the retry here is the portal's.
	p := startWith(t, stackConfig{env: deliveryEnv("1h")})
	t.Cleanup(func() { p.noDeaths(t) })
	rx := receiver.New(t)
	rx.Script("/portal-hooks", receiver.Fail(1, 500), receiver.OK())
	key := p.newKey(t, "acct_portal", false)
	// Its own webhook_endpoint.created is its first delivery, answered 500.
	epID, whsec := p.createEndpoint(t, key, rx.URL()+"/portal-hooks", "webhook_endpoint.created")
	// Answered: a request is listed on arrival, its status once the answer is written.
	first := rx.WaitForAnswered(t, "/portal-hooks", 1, deliveryWait)[0]
	eventID := first.ID()
	if first.Event().Type != "webhook_endpoint.created" || first.Event().ObjectID() != epID || first.Status != 500 {
		t.Fatalf("first delivery (%d): %s", first.Status, first.Body)
	}
	p.trigger(t, key) // a second endpoint, for the overview
	delivery := p.waitDelivery(t, key, eventID, epID, deliveryWait, "one failed attempt", func(d map[string]any) bool { return len(attempts(d)) == 1 })
	deliveryID := str(delivery["id"])

	base, id, token := p.portalSession(t, key, map[string]any{"access": "read_write", "return_url": "https://shop.example.com/settings"})
	if base != p.GatewayURL {
		t.Fatalf("the link's base %s, want the address the request was sent to, %s", base, p.GatewayURL)
	}
	// The browser goes through the contract's proxy, so every exchange is checked against
	// api/openapi.yaml.
	proxy := contractProxy(t, p.GatewayURL)
	page := tab{t, ctx}
	run, eval := page.run, page.eval
	waitFor := func(what, js, want string) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
			if err == nil && strings.Contains(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %q, want %q (page %s: %q)", what, got, want, eval(`location.href`), eval(`document.body.innerText`))
			}
		}
	}
	h1 := `(document.querySelector('h1') || {}).textContent || ""`
	click := func(what, selector, wantH1 string) {
		t.Helper()
		run(what, chromedp.Click(chromedp.CSS(selector)))
		waitFor(what, h1, wantH1)
	}

	// The link: the token goes into the cookie and out of the address bar.
	run("opening the link", chromedp.Navigate(proxy+"/portal/"+id+"?token="+token))
	waitFor("the overview", h1, "Webhook endpoints")
	if got := eval(`location.href`); got != proxy+"/portal/"+id {
		t.Fatalf("at %s after the link, want the address without the token", got)
	}
	if got := eval(`document.cookie`); got != "" {
		t.Fatalf("the page's script reads the cookie: %q", got)
	}
	text := eval(`document.body.innerText`)
	for _, want := range []string{rx.URL() + "/portal-hooks", publicURL, "Test mode", "Read and write access", "Back to shop.example.com", "webhook_endpoint.created"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the overview lacks %q:\n%s", want, text)
		}
	}

	// The endpoint, then its delivery: the failed attempt, with its status and duration.
	click("opening the endpoint", `a[href$="/endpoints/`+epID+`"]`, "Webhook endpoint")
	if got := eval(`document.getElementById('endpoint-status').textContent`); got != "enabled" {
		t.Fatalf("endpoint status %q", got)
	}
	click("opening the delivery", `a[href$="/deliveries/`+deliveryID+`"]`, "Delivery")
	if got := eval(`document.getElementById('event-id').textContent`); got != eventID {
		t.Fatalf("the delivery's event %q, want %s", got, eventID)
	}
	row := `[...document.querySelectorAll('#attempts tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()).join('|')).join('\n')`
	attempt1 := eval(row)
	if m := regexp.MustCompile(`^1\|[0-9-]+ [0-9:]+ UTC\|500\|[0-9]+ ms\|http_status `).MatchString(attempt1); !m {
		t.Fatalf("the attempts: %q", attempt1)
	}

	// Retry: back on the delivery with a notice, and the receiver gets the same webhook-id.
	click("retrying", "#retry-delivery", "Delivery")
	waitFor("the notice", `(document.getElementById('flash') || {}).textContent || ""`, "sent again")
	if got := eval(`document.activeElement.id`); got != "flash" {
		t.Fatalf("after the retry the focus is on %q, want the notice", got)
	}
	retriedOf := func(reqs []receiver.Request) []receiver.Request {
		var out []receiver.Request
		for _, r := range reqs {
			if r.ID() == eventID && r.Done && r.Succeeded() {
				out = append(out, r)
			}
		}
		return out
	}
	again := retriedOf(rx.WaitUntil(t, "/portal-hooks", deliveryWait, "the retried event answered 200",
		func(reqs []receiver.Request) bool { return len(retriedOf(reqs)) > 0 }))
	if len(again) != 1 {
		t.Fatalf("the retry reached the receiver %d times", len(again))
	}
	if err := verifier(t, whsec).Verify(again[0].Header, again[0].Body); err != nil {
		t.Fatal(err)
	}
	p.waitDelivery(t, key, eventID, epID, deliveryWait, "succeeded", statusIs("succeeded"))
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		run("reloading the delivery", chromedp.Reload())
		waitFor("the delivery", h1, "Delivery")
		if got := eval(row); regexp.MustCompile(`\n2\|[^|]+\|200\|[0-9]+ ms\|–$`).MatchString(got) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the attempts after the retry: %q", got)
		}
	}

	// Rotate the secret: shown once; the next delivery verifies with it.
	click("back to the endpoint", `main a[href$="/endpoints/`+epID+`"]`, "Webhook endpoint")
	click("rotating the secret", "#rotate-secret", "New signing secret")
	newSecret := eval(`document.getElementById('new-secret').value`)
	if !strings.HasPrefix(newSecret, "whsec_") || newSecret == whsec {
		t.Fatalf("new secret %q", newSecret)
	}
	next := p.trigger(t, key)
	signed := rx.WaitUntil(t, "/portal-hooks", deliveryWait, "the next event", answeredAbout("webhook_endpoint.created", next))
	for _, r := range about(signed, "webhook_endpoint.created", next) {
		if err := verifier(t, newSecret).Verify(r.Header, r.Body); err != nil {
			t.Fatalf("the next delivery with the new secret: %v", err)
		}
	}

	// Disable, then enable: the API's own update, its events naming the portal's requests.
	click("back to the endpoint", `main a[href$="/endpoints/`+epID+`"]`, "Webhook endpoint")
	click("disabling", "#disable-endpoint", "Webhook endpoint")
	waitFor("disabled", `document.getElementById('endpoint-status').textContent`, "disabled")
	if got := str(call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints/"+epID, key, nil).Body["status"]); got != "disabled" {
		t.Fatalf("after disable the API says %s", got)
	}
	click("enabling", "#enable-endpoint", "Webhook endpoint")
	waitFor("enabled", `document.getElementById('endpoint-status').textContent`, "enabled")
	if got := str(call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints/"+epID, key, nil).Body["status"]); got != "enabled" {
		t.Fatalf("after enable the API says %s", got)
	}
	updated := p.waitEvent(t, key, "webhook_endpoint.updated", epID, deliveryWait)
	if req := sub(updated, "request"); !strings.HasPrefix(str(req["id"]), "req_") || req["idempotency_key"] != nil {
		t.Fatalf("the update's request: %v", req)
	}

	// The recent events, through the navigation.
	click("the events", `nav a[href$="/events"]`, "Recent events")
	if text := eval(`document.body.innerText`); !strings.Contains(text, eventID) || !strings.Contains(text, "webhook_endpoint.updated") {
		t.Fatalf("the events page:\n%s", text)
	}
	consoleErrors(t, console(), true)
}

// portalPage is one answer of the portal, over plain HTTP, cookies and redirects by hand.
type portalPage struct {
	status int
	header http.Header
	body   string
}

func portalRequest(t *testing.T, method, u, cookie string, form url.Values) portalPage {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(withTest(context.Background(), t), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.Header.Set("Cookie", "portal_token="+cookie)
	}
	client := &http.Client{Transport: http.DefaultClient.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return portalPage{res.StatusCode, res.Header, string(raw)}
}

// A token opens its own session only, and a session shows its account and mode's objects
// only, within its endpoint when it has one; everything else is the same 404, byte for byte.
// A read-only session cannot act. (Expiry, an hour, is tested with an injected clock in
// webhooks-svc/internal/app.)
func TestWebhookPortalTokens(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: deliveryEnv("1h")})
	t.Cleanup(func() { p.noDeaths(t) })
	rx := receiver.New(t)
	keyA, keyB := p.newKey(t, "acct_portala", false), p.newKey(t, "acct_portalb", false)
	epA, _ := p.createEndpoint(t, keyA, rx.URL()+"/a", "webhook_endpoint.created")
	other := p.trigger(t, keyA) // a second endpoint of A, and an event delivered to epA
	ev := p.waitEvent(t, keyA, "webhook_endpoint.created", other, deliveryWait)
	dA := str(p.waitDelivery(t, keyA, str(ev["id"]), epA, deliveryWait, "succeeded", statusIs("succeeded"))["id"])

	_, all, allToken := p.portalSession(t, keyA, map[string]any{"access": "read_write"})
	_, ro, roToken := p.portalSession(t, keyA, nil)
	_, scoped, scopedToken := p.portalSession(t, keyA, map[string]any{"endpoint": other, "access": "read_write"})
	_, b, bToken := p.portalSession(t, keyB, map[string]any{"access": "read_write"})
	gw := p.GatewayURL + "/portal/"

	// The link sets the cookie; the cookie opens the pages.
	enter := portalRequest(t, "GET", gw+all+"?token="+allToken, "", nil)
	if enter.status != 303 || enter.header.Get("Location") != "/portal/"+all || !strings.Contains(enter.header.Get("Set-Cookie"), "portal_token="+allToken) {
		t.Fatalf("the link: %d %v", enter.status, enter.header)
	}
	page := portalRequest(t, "GET", gw+all+"/deliveries/"+dA, allToken, nil)
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page.body)
	if page.status != 200 || csrf == nil {
		t.Fatalf("the delivery with the cookie: %d\n%s", page.status, page.body)
	}

	cases := []struct {
		name string
		res  portalPage
	}{
		{"a wrong token in the link", portalRequest(t, "GET", gw+all+"?token="+allToken[:len(allToken)-1]+"x", "", nil)},
		{"another account's session token in the link", portalRequest(t, "GET", gw+all+"?token="+bToken, "", nil)},
		{"another account's session token in the cookie", portalRequest(t, "GET", gw+all, bToken, nil)},
		{"another session's token of the same account", portalRequest(t, "GET", gw+all+"/events", roToken, nil)},
		{"no cookie", portalRequest(t, "GET", gw+all, "", nil)},
		{"an unknown session", portalRequest(t, "GET", gw+"wps_01h00000000000000000000000", allToken, nil)},
		{"another account's delivery", portalRequest(t, "GET", gw+b+"/deliveries/"+dA, bToken, nil)},
		{"another account's endpoint", portalRequest(t, "GET", gw+b+"/endpoints/"+epA, bToken, nil)},
		{"a retry of another account's delivery", portalRequest(t, "POST", gw+b+"/deliveries/"+dA+"/retry", bToken, url.Values{"csrf": {csrf[1]}})},
		{"an endpoint outside the scope", portalRequest(t, "GET", gw+scoped+"/endpoints/"+epA, scopedToken, nil)},
		{"a delivery outside the scope", portalRequest(t, "GET", gw+scoped+"/deliveries/"+dA, scopedToken, nil)},
		{"a disable outside the scope", portalRequest(t, "POST", gw+scoped+"/endpoints/"+epA+"/disable", scopedToken, url.Values{"csrf": {csrf[1]}})},
	}
	first := cases[0].res
	for _, tc := range cases {
		r := tc.res
		if r.status != 404 || r.header.Get("Content-Type") != "text/html; charset=utf-8" || r.header.Get("Cache-Control") != "no-store" ||
			r.header.Get("Referrer-Policy") != "no-referrer" || r.header.Get("X-Frame-Options") != "DENY" || r.header.Get("Set-Cookie") != "" {
			t.Fatalf("%s: %d %v", tc.name, r.status, r.header)
		}
		if r.body != first.body || r.header.Get("Content-Security-Policy") != first.header.Get("Content-Security-Policy") {
			t.Fatalf("%s: a 404 unlike the others:\n%s\n---\n%s", tc.name, r.body, first.body)
		}
	}
	if !strings.Contains(first.body, "Page not found") || strings.Contains(first.body, "wps_") || strings.Contains(first.body, "we_") {
		t.Fatalf("the 404 page: %s", first.body)
	}

	// Within the scope the scoped session works; read-only shows without forms and cannot act.
	if r := portalRequest(t, "GET", gw+scoped+"/endpoints/"+other, scopedToken, nil); r.status != 200 || !strings.Contains(r.body, "Disable the endpoint") {
		t.Fatalf("the scoped endpoint: %d", r.status)
	}
	roPage := portalRequest(t, "GET", gw+ro+"/endpoints/"+epA, roToken, nil)
	if roPage.status != 200 || strings.Contains(roPage.body, "<form") || !strings.Contains(roPage.body, "Read-only access") {
		t.Fatalf("read-only endpoint page: %d\n%s", roPage.status, roPage.body)
	}
	for _, action := range []string{"/endpoints/" + epA + "/disable", "/endpoints/" + epA + "/rotate_secret", "/deliveries/" + dA + "/retry"} {
		if r := portalRequest(t, "POST", gw+ro+action, roToken, url.Values{"csrf": {csrf[1]}}); r.status != 403 || !strings.Contains(r.body, "read-only") {
			t.Fatalf("read-only POST %s: %d\n%s", action, r.status, r.body)
		}
	}
	// A writable session's action needs its page's CSRF value, besides the cookie.
	if r := portalRequest(t, "POST", gw+all+"/endpoints/"+epA+"/disable", allToken, url.Values{}); r.status != 403 {
		t.Fatalf("an action without the CSRF value: %d", r.status)
	}
	if r := portalRequest(t, "POST", gw+all+"/endpoints/"+epA+"/disable", allToken, url.Values{"csrf": {csrf[1]}}); r.status != 303 {
		t.Fatalf("an action with it: %d %s", r.status, r.body)
	}
	if got := str(call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints/"+epA, keyA, nil).Body["status"]); got != "disabled" {
		t.Fatalf("epA is %s after the one allowed action, want disabled", got)
	}
	// With the endpoint disabled, a retry is refused with the reason (409), as the API's is.
	if r := portalRequest(t, "POST", gw+all+"/deliveries/"+dA+"/retry", allToken, url.Values{"csrf": {csrf[1]}}); r.status != 409 || !strings.Contains(r.body, "disabled") {
		t.Fatalf("a retry to a disabled endpoint: %d\n%s", r.status, r.body)
	}

	// The API's refusals name the parameter.
	wantErr(t, call(t, "POST", p.GatewayURL+"/v1/webhook_portal_sessions", keyB, map[string]any{"endpoint": epA}), 404, "resource_missing", "endpoint")
	wantErr(t, call(t, "POST", p.GatewayURL+"/v1/webhook_portal_sessions", keyA, map[string]any{"access": "write"}), 400, "parameter_invalid", "access")
	wantErr(t, call(t, "POST", p.GatewayURL+"/v1/webhook_portal_sessions", keyA, map[string]any{"return_url": "http://shop.example.com"}), 400, "url_not_https", "return_url")
}
