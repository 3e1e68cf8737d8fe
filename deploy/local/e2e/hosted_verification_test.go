package e2e

// The hosted verification page (docs/hosted-pages.md) end to end: a session created with an
// API key, its page opened on the gateway's public address without one, walked in headless
// Chromium with the keyboard, the applicant sent back to the session's redirect_url, the
// session's state read through the API and its events taken at a webhook receiver. And every
// secret that does not open a page gets the same 404.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"rentalplatform/deploy/local/e2e/receiver"
)

// returnSite is the applicant's way back: the redirect_url's server, on TLS as redirect_url
// requires, which records the requests it gets.
type returnSite struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newReturnSite(t *testing.T) *returnSite {
	t.Helper()
	r := &returnSite{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, req.Clone(context.Background()))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><title>Back at the letting agent</title><h1>Thanks</h1></html>`))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *returnSite) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// focused names the element that has the focus: its id, else its class, else its tag
// ("button" for the submit button).
const focused = `(e => e ? e.id || e.className || e.tagName.toLowerCase() : "nothing")(document.activeElement)`

func TestHostedVerification(t *testing.T) {
	t.Parallel()
	ctx, console := browser(t)
	p := startWith(t, stackConfig{env: verificationEnv()})
	t.Cleanup(func() { p.noDeaths(t) })
	rx := receiver.New(t)
	back := newReturnSite(t)
	key := p.newKey(t, "acct_hosted", false)
	_, whsec := p.createEndpoint(t, key, rx.URL()+"/hooks", verificationTypes...)
	c := vs{t, p, key}
	created := c.create(sessionBody("hosted@example.com", map[string]any{"redirect_url": back.srv.URL + "/return?from=verification"}))
	id, secret := str(created.Body["id"]), str(created.Body["client_secret"])

	// The browser talks to the gateway through the contract's proxy: every exchange of the
	// page is checked against api/openapi.yaml like the suite's own.
	pageURL := contractProxy(t, p.GatewayURL) + "/verify/" + id + "?client_secret=" + url.QueryEscape(secret)
	page := tab{t, ctx}
	run, eval := page.run, page.eval
	wantFocus := func(after, want string) {
		t.Helper()
		// A key press is handled at once; a link's navigation moves the focus a moment later.
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			got := eval(focused)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s the focus is on %q, want %q", after, got, want)
			}
		}
	}
	press := func(key, want string) {
		t.Helper()
		run("pressing "+key, chromedp.KeyEvent(key))
		wantFocus("a key press", want)
	}

	run("opening the page", chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.CSS("h1")))
	if got := eval(`document.querySelector('h1').textContent`); got != "Complete your verification" {
		t.Fatalf("h1 %q", got)
	}
	if got := eval(`[...document.querySelectorAll('legend')].map(l => l.textContent).join('|')`); got != "Identity check|Income check|Credit check" {
		t.Fatalf("legends %q", got)
	}

	// Keyboard only: the skip link first, then into main; a radio group per product in their
	// order. The credit check is left without an answer.
	press(kb.Tab, "skip-link")
	press(kb.Enter, "main")
	press(kb.Tab, "outcome-identity-passed")
	press(" ", "outcome-identity-passed")
	press(kb.Tab, "outcome-income-passed")
	press(kb.ArrowDown, "outcome-income-failed") // moves within the group and chooses
	press(kb.Tab, "outcome-credit-passed")
	press(kb.Tab, "button")
	if got := eval(`document.activeElement.textContent`); got != "Submit results" {
		t.Fatalf("the focus is on %q, want the submit button", got)
	}
	run("submitting without the credit check", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.ID("error-summary")))

	// The same page with the error: the summary has the focus and links to the group, which
	// the error describes; the choices made are kept.
	wantFocus("a refused submission", "error-summary")
	if got := eval(`document.title`); !strings.HasPrefix(got, "Error: ") {
		t.Fatalf("title %q", got)
	}
	if got := eval(`document.getElementById('outcome-credit').getAttribute('aria-describedby')`); got != "outcome-credit-hint outcome-credit-error-message" {
		t.Fatalf("the credit group is described by %q", got)
	}
	if got := eval(`[...document.querySelectorAll('input:checked')].map(i => i.id).join('|')`); got != "outcome-identity-passed|outcome-income-failed" {
		t.Fatalf("checked after the error: %q", got)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rental-e2e-hosted-page-")
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "hosted-page-error.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	artifact(t, "the hosted verification page after a submission with a check unanswered", png)

	press(kb.Tab, "a")
	if got := eval(`document.activeElement.getAttribute('href')`); got != "#outcome-credit-passed" {
		t.Fatalf("after the summary the focus is on a link to %q", got)
	}
	// The link is clicked: chromedp's Enter also sends a char event, which a browser drops
	// after a handled keydown, but here it would reach the radio the link just focused and
	// submit the form.
	run("following the summary's link", chromedp.Click(chromedp.CSS("#error-summary a")))
	wantFocus("the summary's link", "outcome-credit-passed") // the link takes the focus to the group
	press(kb.ArrowDown, "outcome-credit-failed")
	press(kb.Tab, "button")
	if got := eval(`document.activeElement.textContent`); got != "Submit results" {
		t.Fatalf("the focus is on %q, want the submit button", got)
	}

	// Submitted: the applicant lands on the redirect_url, and the way there carries no Referer.
	run("submitting", chromedp.KeyEvent(kb.Enter))
	deadline := time.Now().Add(30 * time.Second)
	for !strings.HasPrefix(eval(`location.href`), back.srv.URL+"/return") {
		if time.Now().After(deadline) {
			t.Fatalf("not sent back: at %s, %q", eval(`location.href`), eval(`document.body.innerText`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := eval(`location.href`); got != back.srv.URL+"/return?from=verification" {
		t.Fatalf("landed on %s", got)
	}
	var returns []*http.Request // besides the browser's request for a favicon
	for _, r := range back.requests() {
		if r.URL.Path == "/return" {
			returns = append(returns, r)
		}
	}
	if len(returns) != 1 || returns[0].Method != "GET" || returns[0].Header.Get("Referer") != "" {
		t.Fatalf("the return site got %d requests for the page; the first: %+v", len(returns), returns)
	}

	// The session through the API: completed, with the report of the choices made.
	got := c.get(id)
	if got.Body["status"] != "completed" || str(got.Body["report"]) == "" {
		t.Fatalf("the session after the page: %s", got.Raw)
	}
	rep := call(t, "GET", p.GatewayURL+"/v1/verification_reports/"+str(got.Body["report"]), key, nil)
	prods := sub(rep.Body, "products")
	if rep.Status != 200 || sub(prods, "identity")["status"] != "passed" || sub(prods, "income")["status"] != "failed" || sub(prods, "credit")["status"] != "failed" {
		t.Fatalf("report: %d %s", rep.Status, rep.Raw)
	}

	// Its events at the endpoint: the API's own lifecycle, signed, naming the page's request.
	reportID := str(got.Body["report"])
	want := []string{"verification_session.created", "verification_session.pending", "verification_session.processing",
		"verification_report.created", "verification_session.completed"}
	events := rx.WaitUntil(t, "/hooks", deliveryWait, "the session's events", hasSequence(want, id, reportID))
	if got := sequence(events, id, reportID); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant %v", got, want)
	}
	for _, q := range append(about(events, "", id), about(events, "", reportID)...) {
		if err := verifier(t, whsec).Verify(q.Header, q.Body); err != nil {
			t.Fatalf("%s: %v", q.Event().Type, err)
		}
		if strings.Contains(string(q.Body), secret) {
			t.Fatalf("an event carries the client secret: %s", q.Body)
		}
	}
	completed := p.waitEvent(t, key, "verification_session.completed", id, deliveryWait)
	if req := sub(completed, "request"); str(req["id"]) == "" || req["idempotency_key"] != nil {
		t.Fatalf("the completed event's request: %v", req)
	}

	// The link is spent: the page is the same 404 as any other.
	run("opening the page again", chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.CSS("h1")))
	if got := eval(`document.querySelector('h1').textContent`); got != "Page not found" {
		t.Fatalf("the page after completion: %q", got)
	}

	// Nothing was refused or failed on any page: a CSP violation ("Refused to apply …") is a
	// console error. Answers' statuses are logged as errors too (the 422 and 404 pages above,
	// the gateway's 401 to the browser's request for a favicon); the test checks those itself.
	consoleErrors(t, console(), true)
}

// Every secret that does not open the page gets the same 404, byte for byte: an expired
// session's, a wrong one, another session's; a 404 counts as a failed authentication of the
// address, which is blocked after GATEWAY_AUTH_FAILURE_LIMIT of them, on the API too.
func TestHostedVerificationSecrets(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: map[string]string{"GATEWAY_AUTH_FAILURE_LIMIT": "6"},
		programEnv: map[string]map[string]string{"verification-svc": {"VERIFICATION_SESSION_TTL": "8s"}}})
	t.Cleanup(func() { p.noDeaths(t) })
	key := p.newKey(t, "acct_hostedsecrets", false)
	c := vs{t, p, key}
	create := func() (string, string) {
		r := c.create(sessionBody("secrets@example.com", nil))
		return str(r.Body["id"]), str(r.Body["client_secret"])
	}
	page := func(id, secret string) response {
		t.Helper()
		return callRaw(t, "GET", p.GatewayURL+"/verify/"+id+"?client_secret="+url.QueryEscape(secret), "", "", nil)
	}
	expired, expiredSecret := create()
	if r := page(expired, expiredSecret); r.Status != 200 || !strings.Contains(string(r.Raw), "Complete your verification") {
		t.Fatalf("the page with its secret: %d %s", r.Status, r.Raw)
	}

	// expires_at has come (sessions live 8 s here): the session expires (its task, or the
	// sweep), and its secret opens nothing. Then two sessions of the full lifetime.
	untilStatus := func(id, status string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for c.get(id).Body["status"] != status {
			if time.Now().After(deadline) {
				t.Fatalf("%s is not %s within 30 s", id, status)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	untilStatus(expired, "expired")
	a, aSecret := create()
	b, bSecret := create()
	if r := page(a, aSecret); r.Status != 200 {
		t.Fatalf("a's page with its secret: %d %s", r.Status, r.Raw)
	}
	cases := []struct {
		name string
		res  response
	}{
		{"an expired session's secret", page(expired, expiredSecret)},
		{"a wrong secret", page(b, b+"_secret_"+strings.Repeat("A", 32))},
		{"another session's secret", page(b, aSecret)},
		{"another session's secret, posted", callRaw(t, "POST", p.GatewayURL+"/verify/"+b, "",
			url.Values{"client_secret": {aSecret}, "outcomes[identity]": {"passed"}}.Encode(),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})},
	}
	first := cases[0].res
	for _, tc := range cases {
		r := tc.res
		if r.Status != 404 || r.Header.Get("Content-Type") != "text/html; charset=utf-8" || r.Header.Get("Cache-Control") != "no-store" ||
			r.Header.Get("Referrer-Policy") != "no-referrer" || r.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("%s: %d %v", tc.name, r.Status, r.Header)
		}
		if string(r.Raw) != string(first.Raw) || r.Header.Get("Content-Security-Policy") != first.Header.Get("Content-Security-Policy") {
			t.Fatalf("%s: a 404 unlike the others:\n%s\n---\n%s", tc.name, r.Raw, first.Raw)
		}
	}
	if !strings.Contains(string(first.Raw), "Page not found") || strings.Contains(string(first.Raw), "vs_") {
		t.Fatalf("the 404 page: %s", first.Raw)
	}
	if got := c.get(b).Body["status"]; got != "created" {
		t.Fatalf("b after the refused requests: %v", got)
	}

	// Four 404s so far; the seventh is over the limit of six a minute: it is still answered,
	// and the next request from the address, a page with its right secret or the API with a
	// valid key, is refused.
	for range 3 {
		if r := page(b, "nope"); r.Status != 404 {
			t.Fatalf("a wrong secret: %d", r.Status)
		}
	}
	blocked := page(b, bSecret)
	if blocked.Status != 429 || blocked.Header.Get("Retry-After") == "" || !strings.Contains(string(blocked.Raw), "Too many requests") {
		t.Fatalf("after 7 failures: %d %s", blocked.Status, blocked.Raw)
	}
	wantErr(t, call(t, "GET", p.GatewayURL+"/v1/verification_sessions/"+b, key, nil), 429, "authentication_rate_limited", "")
}
