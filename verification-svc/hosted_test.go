package main

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"rentalplatform/libs/servicetest"
)

// The hosted page (/verify/:id, internal/ports/hosted) through run(), as the gateway forwards
// a browser's requests: signed with the hosted-page identity, no account.

// page is a hosted answer, parsed.
type page struct {
	servicetest.Response
	doc *html.Node
}

func hostedGet(t *testing.T, api *servicetest.Client, id, secret string) page {
	t.Helper()
	target := "/verify/" + id
	if secret != "" {
		target += "?client_secret=" + url.QueryEscape(secret)
	}
	return parsed(t, api.Hosted().Send("GET", target, "", nil))
}

func hostedPost(t *testing.T, api *servicetest.Client, id string, form url.Values) page {
	t.Helper()
	return parsed(t, api.Hosted().Send("POST", "/verify/"+id, "application/x-www-form-urlencoded", strings.NewReader(form.Encode())))
}

func parsed(t *testing.T, r servicetest.Response) page {
	t.Helper()
	p := page{Response: r}
	if len(r.Raw) > 0 {
		doc, err := html.Parse(strings.NewReader(string(r.Raw)))
		if err != nil {
			t.Fatalf("not HTML: %v\n%s", err, r.Raw)
		}
		p.doc = doc
	}
	return p
}

// nodes returns the elements of the page for which match holds, in document order.
func (p page) nodes(match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	if p.doc != nil {
		walk(p.doc)
	}
	return out
}

func (p page) tag(name string) []*html.Node {
	return p.nodes(func(n *html.Node) bool { return n.Data == name })
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	return slices.ContainsFunc(n.Attr, func(a html.Attribute) bool { return a.Key == key })
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// wantSafeHeaders checks what every hosted answer carries, and that the page loads nothing and
// its one inline stylesheet is the one the policy allows.
func (p page) wantSafeHeaders(t *testing.T) {
	t.Helper()
	h := p.Header
	for k, v := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
		"X-Content-Type-Options": "nosniff", "Content-Type": "text/html; charset=utf-8"} {
		if h.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, h.Get(k), v)
		}
	}
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %s", csp, want)
		}
	}
	styles := p.tag("style")
	if len(styles) != 1 {
		t.Fatalf("%d style elements", len(styles))
	}
	sum := sha256.Sum256([]byte(styles[0].FirstChild.Data))
	if !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Errorf("the policy %q does not allow the page's stylesheet", csp)
	}
	if n := p.nodes(func(n *html.Node) bool {
		return n.Data == "script" || n.Data == "link" || n.Data == "img" || n.Data == "iframe" || hasAttr(n, "style") || hasAttr(n, "src")
	}); len(n) > 0 {
		t.Errorf("the page loads or runs something: <%s>", n[0].Data)
	}
	if html := p.tag("html"); len(html) != 1 || attr(html[0], "lang") != "en" {
		t.Error("no <html lang=en>")
	}
	if len(p.tag("main")) != 1 || len(p.tag("h1")) != 1 {
		t.Error("not one <main> and one <h1>")
	}
}

// wantAccessibleForm checks the form's structure: every control labelled, every radio in a
// fieldset with a legend, every aria-describedby naming elements of the page, ids unique, a
// skip link to the main landmark, and the secret in the body of a POST to the page itself.
func (p page) wantAccessibleForm(t *testing.T, id, secret string) {
	t.Helper()
	ids := map[string]int{}
	for _, n := range p.nodes(func(n *html.Node) bool { return attr(n, "id") != "" }) {
		ids[attr(n, "id")]++
	}
	for k, n := range ids {
		if n > 1 {
			t.Errorf("id %s used %d times", k, n)
		}
	}
	labels := map[string]bool{}
	for _, l := range p.tag("label") {
		labels[attr(l, "for")] = true
	}
	for _, in := range p.tag("input") {
		if attr(in, "type") == "hidden" {
			continue
		}
		if !labels[attr(in, "id")] {
			t.Errorf("input %s has no <label for>", attr(in, "id"))
		}
		if attr(in, "type") == "radio" {
			fs := in.Parent
			for fs != nil && fs.Data != "fieldset" {
				fs = fs.Parent
			}
			if fs == nil || fs.FirstChild == nil || len((page{doc: fs}).tag("legend")) != 1 {
				t.Errorf("radio %s is not in a fieldset with a legend", attr(in, "id"))
			}
		}
	}
	for _, n := range p.nodes(func(n *html.Node) bool { return hasAttr(n, "aria-describedby") }) {
		for _, ref := range strings.Fields(attr(n, "aria-describedby")) {
			if ids[ref] == 0 {
				t.Errorf("<%s> is described by %s, which is not on the page", n.Data, ref)
			}
		}
	}
	skip := p.nodes(func(n *html.Node) bool { return n.Data == "a" && attr(n, "class") == "skip-link" })
	if len(skip) != 1 || attr(skip[0], "href") != "#main" || attr(p.tag("main")[0], "id") != "main" {
		t.Error("no skip link to the main landmark")
	}
	forms := p.tag("form")
	if len(forms) != 1 || attr(forms[0], "method") != "post" || attr(forms[0], "action") != "/verify/"+id {
		t.Fatalf("form: %v", forms)
	}
	hidden := p.nodes(func(n *html.Node) bool { return n.Data == "input" && attr(n, "name") == "client_secret" })
	if len(hidden) != 1 || attr(hidden[0], "type") != "hidden" || attr(hidden[0], "value") != secret {
		t.Error("the form does not carry the client secret in its body")
	}
}

// legends returns the legends' texts.
func (p page) legends() []string {
	var out []string
	for _, l := range p.tag("legend") {
		out = append(out, text(l))
	}
	return out
}

func outcomesForm(secret string, kv ...string) url.Values {
	f := url.Values{"client_secret": {secret}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set("outcomes["+kv[i]+"]", kv[i+1])
	}
	return f
}

func TestHostedPage(t *testing.T) {
	t.Parallel()
	s := start(t)
	res := s.api.Do("POST", "/v1/verification_sessions", fullBody).WantOK(t)
	id, secret := res.Str("id"), res.Str("client_secret")

	// The page: the products, a radio group each, nothing changed by showing it.
	p := hostedGet(t, s.api, id, secret)
	if p.Status != http.StatusOK {
		t.Fatalf("GET: %d %s", p.Status, p.Raw)
	}
	p.wantSafeHeaders(t)
	p.wantAccessibleForm(t, id, secret)
	if got := p.legends(); !slices.Equal(got, []string{"Identity check", "Income check", "Credit check"}) {
		t.Fatalf("legends %v", got)
	}
	if csp := p.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' https://example.com;") {
		t.Errorf("the form may not go on to the redirect_url's origin: %s", csp)
	}
	for _, want := range []string{"Test mode", "This is a test verification", "sent back to example.com", "Decline the checks"} {
		if !strings.Contains(string(p.Raw), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if radios := p.nodes(func(n *html.Node) bool { return attr(n, "type") == "radio" }); len(radios) != 9 ||
		attr(radios[0], "name") != "outcomes[identity]" || attr(radios[0], "value") != "passed" ||
		attr(radios[2], "value") != "error" || slices.ContainsFunc(radios, func(n *html.Node) bool { return hasAttr(n, "checked") }) {
		t.Fatalf("radios: %d", len(radios))
	}
	if st := s.api.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t).Str("status"); st != "created" {
		t.Fatalf("showing the page moved the session to %s", st)
	}

	// A product left without a choice: 422, the page again with the choices made, the error
	// in a focused summary linking to the group and described on the group itself.
	bad := hostedPost(t, s.api, id, outcomesForm(secret, "identity", "passed", "income", "failed", "credit", "maybe"))
	if bad.Status != http.StatusUnprocessableEntity {
		t.Fatalf("incomplete POST: %d %s", bad.Status, bad.Raw)
	}
	bad.wantSafeHeaders(t)
	bad.wantAccessibleForm(t, id, secret)
	summary := bad.nodes(func(n *html.Node) bool { return attr(n, "id") == "error-summary" })
	if len(summary) != 1 || attr(summary[0], "role") != "alert" || !hasAttr(summary[0], "autofocus") || attr(summary[0], "tabindex") != "-1" {
		t.Fatal("no focused error summary")
	}
	links := (page{doc: summary[0]}).tag("a")
	if len(links) != 1 || attr(links[0], "href") != "#outcome-credit-passed" || text(links[0]) != "Choose how the credit check turns out." {
		t.Fatalf("summary links %v", links)
	}
	credit := bad.nodes(func(n *html.Node) bool { return attr(n, "id") == "outcome-credit" })
	if len(credit) != 1 || attr(credit[0], "aria-describedby") != "outcome-credit-hint outcome-credit-error-message" {
		t.Fatal("the credit group is not described by its error")
	}
	checked := bad.nodes(func(n *html.Node) bool { return hasAttr(n, "checked") })
	if len(checked) != 2 || attr(checked[0], "id") != "outcome-identity-passed" || attr(checked[1], "id") != "outcome-income-failed" {
		t.Fatalf("the choices made are not kept: %v", checked)
	}
	if !strings.HasPrefix(text(bad.tag("title")[0]), "Error: ") {
		t.Error("the title does not start with Error:")
	}
	if st := s.api.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t).Str("status"); st != "created" {
		t.Fatalf("an incomplete form moved the session to %s", st)
	}

	// Submitted: the session walks its lifecycle in one write, with the API's events, and the
	// applicant is sent to the redirect_url.
	ok := hostedPost(t, s.api, id, outcomesForm(secret, "identity", "passed", "income", "passed", "credit", "failed"))
	if ok.Status != http.StatusSeeOther || ok.Header.Get("Location") != "https://example.com/done" ||
		ok.Header.Get("Referrer-Policy") != "no-referrer" || ok.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("POST: %d %v %s", ok.Status, ok.Header, ok.Raw)
	}
	done := s.api.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t)
	if done.Str("status") != "completed" || done.Str("report") == "" {
		t.Fatalf("after the page: %s", done.Raw)
	}
	rep := s.api.Do("GET", "/v1/verification_reports/"+done.Str("report"), "").WantOK(t)
	prods := obj(rep.Body["products"])
	if obj(prods["identity"])["status"] != "passed" || obj(prods["income"])["status"] != "passed" || obj(prods["credit"])["status"] != "failed" {
		t.Fatalf("report: %s", rep.Raw)
	}
	evs := s.waitPublished(t, id, 5)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if want := []string{"verification_session.created", "verification_session.pending", "verification_session.processing",
		"verification_report.created", "verification_session.completed"}; !slices.Equal(types, want) {
		t.Fatalf("events %v\nwant %v", types, want)
	}
	for _, ev := range evs[1:] {
		if ev.Request.ID == nil || *ev.Request.ID == "" || *ev.Request.ID != *evs[4].Request.ID || ev.Account != s.api.Account || ev.Livemode {
			t.Fatalf("%s: request %+v, account %s: the page's events name its request and the session's account", ev.Type, ev.Request, ev.Account)
		}
	}

	// The page is gone with the session's run: the same 404 as any other bad secret.
	if again := hostedGet(t, s.api, id, secret); again.Status != http.StatusNotFound {
		t.Fatalf("GET after completion: %d", again.Status)
	}
	if again := hostedPost(t, s.api, id, outcomesForm(secret, "identity", "passed", "income", "passed", "credit", "passed")); again.Status != http.StatusNotFound {
		t.Fatalf("POST after completion: %d", again.Status)
	}
}

// Every secret that does not open the page gets the same 404, byte for byte: wrong, another
// session's, missing, only in the query of a POST, for a session that ended, expired or does
// not exist.
func TestHostedPageRefusals(t *testing.T) {
	t.Parallel()
	s := start(t, "VERIFICATION_SESSION_TTL", "2s", "VERIFICATION_EXPIRY_SWEEP_INTERVAL", "1h")
	create := func() (string, string) {
		r := s.api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
		return r.Str("id"), r.Str("client_secret")
	}
	expiring, expiringSecret := create()
	id, secret := create()
	other, otherSecret := create()
	canceled, canceledSecret := create()
	s.api.Do("POST", "/v1/verification_sessions/"+canceled+"/cancel", "").WantOK(t)

	var first *page
	same := func(name string, p page) {
		t.Helper()
		if p.Status != http.StatusNotFound {
			t.Fatalf("%s: %d %s", name, p.Status, p.Raw)
		}
		p.wantSafeHeaders(t)
		if first == nil {
			first = &p
			if h1 := text(p.tag("h1")[0]); h1 != "Page not found" {
				t.Fatalf("%s: h1 %q", name, h1)
			}
			return
		}
		if string(p.Raw) != string(first.Raw) || p.Header.Get("Content-Security-Policy") != first.Header.Get("Content-Security-Policy") {
			t.Fatalf("%s: a 404 unlike the others:\n%s", name, p.Raw)
		}
	}
	same("wrong secret", hostedGet(t, s.api, id, id+"_secret_0000000000000000000000000000000"))
	same("another session's secret", hostedGet(t, s.api, id, otherSecret))
	same("no secret", hostedGet(t, s.api, id, ""))
	same("a canceled session", hostedGet(t, s.api, canceled, canceledSecret))
	same("no such session", hostedGet(t, s.api, "vs_01kaj2c8v6f3q9ysq7m2d0w1xz", "vs_01kaj2c8v6f3q9ysq7m2d0w1xz_secret_x"))
	same("not a session id", hostedGet(t, s.api, "nope", secret))
	same("POST, wrong secret", hostedPost(t, s.api, id, outcomesForm("x", "credit", "passed")))
	same("POST, another session's secret", hostedPost(t, s.api, id, outcomesForm(otherSecret, "credit", "passed")))
	q := parsed(t, s.api.Hosted().Send("POST", "/verify/"+id+"?client_secret="+url.QueryEscape(secret), "application/x-www-form-urlencoded",
		strings.NewReader("outcomes%5Bcredit%5D=passed")))
	same("POST, secret only in the query", q)

	// Expiry: past expires_at the secret opens nothing, before the expiry task runs too (the
	// sweep is an hour away here).
	if p := hostedGet(t, s.api, expiring, expiringSecret); p.Status != http.StatusOK {
		t.Fatalf("before expires_at: %d", p.Status)
	}
	time.Sleep(time.Until(time.Unix(int64(s.api.Do("GET", "/v1/verification_sessions/"+expiring, "").WantOK(t).Body["expires_at"].(float64)), 0)) + 100*time.Millisecond)
	same("expired", hostedGet(t, s.api, expiring, expiringSecret))
	same("POST, expired", hostedPost(t, s.api, expiring, outcomesForm(expiringSecret, "credit", "passed")))
	for _, sid := range []string{id, other, expiring} {
		if st := s.api.Do("GET", "/v1/verification_sessions/"+sid, "").WantOK(t).Str("status"); st == "completed" || st == "failed" {
			t.Fatalf("a refused request moved %s to %s", sid, st)
		}
	}

	// Only the hosted-page identity reaches the page, and it reaches nothing else.
	api := s.api.Send("GET", "/verify/"+id+"?client_secret="+url.QueryEscape(secret), "", nil)
	if api.Status != http.StatusUnauthorized || api.ErrCode() != "internal_identity_invalid" {
		t.Fatalf("an API caller on the page: %d %s", api.Status, api.Raw)
	}
	if r := s.api.Hosted().Send("GET", "/v1/verification_sessions/"+id, "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("the hosted-page identity on the API: %d %s", r.Status, r.Raw)
	}
}

// The other outcomes: a check that cannot be completed fails the session naming it; declining
// fails it as consent_declined; without a redirect_url the page says it is done.
func TestHostedPageOutcomes(t *testing.T) {
	t.Parallel()
	s := start(t)
	create := func() (string, string) {
		r := s.api.Do("POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["identity","income","credit"]}`).WantOK(t)
		return r.Str("id"), r.Str("client_secret")
	}
	id, secret := create()
	advance(t, s.api, id, `{"status":"pending"}`).WantOK(t) // the page finishes a started session too
	done := hostedPost(t, s.api, id, outcomesForm(secret, "identity", "passed", "income", "error", "credit", "error"))
	if done.Status != http.StatusOK || text(done.tag("h1")[0]) != "Verification submitted" || !strings.Contains(string(done.Raw), "now failed") {
		t.Fatalf("without a redirect_url: %d %s", done.Status, done.Raw)
	}
	done.wantSafeHeaders(t)
	got := s.api.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t)
	if le := obj(got.Body["last_error"]); got.Str("status") != "failed" || le["code"] != "income_insufficient" || le["product"] != "income" {
		t.Fatalf("a check that cannot be completed: %s", got.Raw)
	}

	id, secret = create()
	f := outcomesForm(secret)
	f.Set("action", "decline")
	if r := hostedPost(t, s.api, id, f); r.Status != http.StatusOK {
		t.Fatalf("decline: %d %s", r.Status, r.Raw)
	}
	got = s.api.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t)
	if le := obj(got.Body["last_error"]); got.Str("status") != "failed" || le["code"] != "consent_declined" || le["product"] != nil {
		t.Fatalf("declined: %s", got.Raw)
	}
	evs := s.waitPublished(t, id, 4)
	if evs[len(evs)-1].Type != "verification_session.failed" {
		t.Fatalf("events of the declined session: %v", evs)
	}
}

// In live mode the page opens and says that nothing can be verified here; a submission changes
// nothing.
func TestHostedPageLiveMode(t *testing.T) {
	t.Parallel()
	s := start(t)
	live := s.api.Mode(true)
	r := live.Do("POST", "/v1/verification_sessions", fullBody).WantOK(t)
	id, secret := r.Str("id"), r.Str("client_secret")
	p := hostedGet(t, s.api, id, secret)
	if p.Status != http.StatusOK || text(p.tag("h1")[0]) != "Verification not available" || len(p.tag("form")) != 0 ||
		!strings.Contains(string(p.Raw), "no provider is connected") || strings.Contains(string(p.Raw), "Test mode") {
		t.Fatalf("live page: %d %s", p.Status, p.Raw)
	}
	p.wantSafeHeaders(t)
	if csp := p.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'none'") {
		t.Errorf("live page policy %s", csp)
	}
	back := p.nodes(func(n *html.Node) bool { return n.Data == "a" && attr(n, "href") == "https://example.com/done" })
	if len(back) != 1 || text(back[0]) != "Return to example.com" {
		t.Error("no link back to the redirect_url")
	}
	post := hostedPost(t, s.api, id, outcomesForm(secret, "identity", "passed", "income", "passed", "credit", "passed"))
	if post.Status != http.StatusConflict || text(post.tag("h1")[0]) != "Verification not available" {
		t.Fatalf("live POST: %d %s", post.Status, post.Raw)
	}
	if st := live.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t).Str("status"); st != "created" {
		t.Fatalf("a live session moved to %s", st)
	}
	// Dates are said plainly, in UTC.
	if !regexp.MustCompile(`works until \d{1,2} [A-Z][a-z]+ \d{4} at \d{2}:\d{2} UTC`).Match(p.Raw) {
		t.Error("no expiry date on the page")
	}
}
