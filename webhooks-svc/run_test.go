package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/servicetest"
)

// Component tests: the whole service through run(), on a free port, against the embedded
// store and Redis, with requests signed the way the gateway signs them. Endpoints that are not
// meant to receive anything use the reserved .invalid domain, so no delivery leaves the
// machine.

const testSecret = servicetest.Secret

// TestComponent runs what every service behind the gateway must do through run(): boot,
// health, identity, errors, configuration.
func TestComponent(t *testing.T) {
	servicetest.Component(t, run, map[string]string{"REDIS_URL": testkit.Redis(t)})
}

type instance struct {
	proc   *servicetest.Process
	env    map[string]string
	url    string
	signer *identity.Signer
	ids    *ids.Generator
}

// start runs the service on its own store and Redis, with a retry schedule short enough for
// tests and the private-address guard lifted so it can deliver to receivers on 127.0.0.1; env
// adds or overrides variables ("" removes one).
func start(t *testing.T, env ...string) *instance {
	t.Helper()
	vars := servicetest.Env(t)
	maps.Copy(vars, map[string]string{
		"REDIS_URL":               testkit.Redis(t),
		"WEBHOOKS_RETRY_SCHEDULE": "100ms,200ms,300ms",
		"WEBHOOKS_ALLOW_PRIVATE":  "true",
		"WEBHOOKS_TLS_INSECURE":   "true",
		"OUTBOX_RELAY_INTERVAL":   "100ms",
	})
	for i := 0; i+1 < len(env); i += 2 {
		if env[i+1] == "" {
			delete(vars, env[i])
		} else {
			vars[env[i]] = env[i+1]
		}
	}
	p := servicetest.Start(t, run, vars, "http")
	signer, err := identity.NewSigner([]byte(testSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &instance{proc: p, env: vars, url: p.URL("http"), signer: signer, ids: ids.NewGenerator(nil)}
}

// client calls the service as one account in one mode, as the gateway would.
type client struct {
	t        *testing.T
	svc      *instance
	account  string
	livemode bool
}

func (s *instance) client(t *testing.T) *client {
	return &client{t: t, svc: s, account: s.ids.New(ids.Account)}
}

// with returns the client reporting failures to t (a subtest).
func (c *client) with(t *testing.T) *client {
	cp := *c
	cp.t = t
	return &cp
}

// otherMode returns a client for the same account in the other mode.
func (c *client) otherMode() *client {
	return &client{t: c.t, svc: c.svc, account: c.account, livemode: !c.livemode}
}

type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a JSON request; body "" sends none.
func (c *client) do(method, target, body string) response {
	c.t.Helper()
	return c.send(method, target, body, "application/json", true)
}

func (c *client) send(method, target, body, contentType string, sign bool) response {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.svc.url+target, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if sign {
		c.svc.signer.Sign(req.Header.Set, identity.Identity{
			Account: c.account, Livemode: c.livemode, RequestID: c.svc.ids.New(ids.Request),
		}, method, req.URL.Path)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	out := response{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		c.t.Fatalf("%s %s: %d, body is not a JSON object: %s", method, target, res.StatusCode, raw)
	}
	return out
}

func (r response) str(key string) string { s, _ := r.body[key].(string); return s }

// wantOK fails unless the status is 200.
func (r response) wantOK(t *testing.T) response {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d, want 200: %s", r.status, r.raw)
	}
	return r
}

// wantError checks the error envelope.
func (r response) wantError(t *testing.T, status int, typ, code, param string) {
	t.Helper()
	e, _ := r.body["error"].(map[string]any)
	gotParam, _ := e["param"].(string)
	if r.status != status || e == nil || e["type"] != typ || e["code"] != code || gotParam != param || e["message"] == "" {
		t.Fatalf("got %d %s; want %d %s/%s param %q", r.status, r.raw, status, typ, code, param)
	}
}

const validBody = `{"url":"https://example.invalid/hooks","enabled_events":["payment_request.succeeded"]}`

func (c *client) create(body string) response {
	c.t.Helper()
	return c.do("POST", "/v1/webhook_endpoints", body).wantOK(c.t)
}

func TestCRUD(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	before := time.Now().Unix()

	created := c.create(`{"url":"https://example.invalid/hooks","enabled_events":["payment_request.succeeded","*","payment_request.succeeded"]}`)
	id := created.str("id")
	if !ids.Valid(ids.WebhookEndpoint, id) {
		t.Fatalf("id %q", id)
	}
	secret := created.str("secret")
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) != 32 {
		t.Fatalf("secret %q: want whsec_ + base64 of 32 bytes", secret)
	}
	ts, _ := created.body["created"].(float64)
	if int64(ts) < before || int64(ts) > time.Now().Unix() {
		t.Fatalf("created %v not within the request", created.body["created"])
	}
	want := map[string]any{
		"id": id, "object": "webhook_endpoint", "url": "https://example.invalid/hooks",
		"enabled_events": []any{"payment_request.succeeded", "*"}, "status": "enabled", "secret": secret,
		"api_version": events.APIVersion, "description": nil, "metadata": map[string]any{},
		"created": ts, "livemode": false,
	}
	assertBody(t, created, want)

	// The secret is shown only once.
	delete(want, "secret")
	got := c.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t)
	assertBody(t, got, want)

	updated := c.do("POST", "/v1/webhook_endpoints/"+id, `{"url":"https://example.invalid/v2","enabled_events":["payment_request.failed"],
		"status":"disabled","description":"billing","metadata":{"team":"billing","env":"staging"}}`).wantOK(t)
	want["url"], want["enabled_events"], want["status"] = "https://example.invalid/v2", []any{"payment_request.failed"}, "disabled"
	want["description"], want["metadata"] = "billing", map[string]any{"team": "billing", "env": "staging"}
	assertBody(t, updated, want)

	// Metadata merges; "" removes a key; description "" clears it; status comes back.
	updated = c.do("POST", "/v1/webhook_endpoints/"+id, `{"metadata":{"env":"","region":"eu"},"description":"","status":"enabled"}`).wantOK(t)
	want["metadata"], want["description"], want["status"] = map[string]any{"team": "billing", "region": "eu"}, nil, "enabled"
	assertBody(t, updated, want)
	assertBody(t, c.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t), want)

	// An empty update changes nothing and returns the object.
	assertBody(t, c.do("POST", "/v1/webhook_endpoints/"+id, "").wantOK(t), want)

	del := c.do("DELETE", "/v1/webhook_endpoints/"+id, "").wantOK(t)
	assertBody(t, del, map[string]any{"id": id, "object": "webhook_endpoint", "deleted": true})
	c.do("GET", "/v1/webhook_endpoints/"+id, "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
	c.do("DELETE", "/v1/webhook_endpoints/"+id, "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"status":"disabled"}`).wantError(t, 404, "invalid_request_error", "resource_missing", "id")
}

// TestCreateRefusesControlCharacters: free text with a control character is a 400 naming the
// parameter (validate.Text), and nothing is created.
func TestCreateRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	for _, tc := range []struct{ body, param string }{
		{`{"url":"https://example.invalid/h","enabled_events":["*"],"description":"a\u0000b"}`, "description"},
		{`{"url":"https://example.invalid/h","enabled_events":["*"],"metadata":{"k\u0000":"v"}}`, "metadata"},
		{`{"url":"https://example.invalid/h","enabled_events":["*"],"metadata":{"k":"\u001b[2J"}}`, "metadata[k]"},
		{`{"url":"https://example.invalid/h#frag","enabled_events":["*"]}`, "url"},
	} {
		c.do("POST", "/v1/webhook_endpoints", tc.body).wantError(t, 400, "invalid_request_error", "parameter_invalid", tc.param)
	}
}

func TestCreateOptionalFields(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	r := c.create(`{"url":"https://example.invalid/h","enabled_events":["*"],"description":"main","api_version":"` +
		events.APIVersion + `","metadata":{"a":"1","b":"","dotted.key":"2","$dollar":"3","ünï code":"4"}}`)
	if r.str("description") != "main" || r.str("api_version") != events.APIVersion {
		t.Fatalf("%s", r.raw)
	}
	// An empty value stores nothing; any other key is kept as sent.
	want := map[string]any{"a": "1", "dotted.key": "2", "$dollar": "3", "ünï code": "4"}
	if md, _ := r.body["metadata"].(map[string]any); fmt.Sprint(md) != fmt.Sprint(want) {
		t.Fatalf("metadata %q, want %q", md, want)
	}
	g := c.do("GET", "/v1/webhook_endpoints/"+r.str("id"), "").wantOK(t)
	if md, _ := g.body["metadata"].(map[string]any); fmt.Sprint(md) != fmt.Sprint(want) {
		t.Fatalf("stored metadata %q, want %q", md, want)
	}
}

func TestRequestIDHeader(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t)
	req, _ := http.NewRequest("GET", s.url+"/v1/webhook_endpoints", nil)
	s.signer.Sign(req.Header.Set, identity.Identity{Account: c.account, RequestID: "req_component"}, "GET", "/v1/webhook_endpoints")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Request-Id") != "req_component" {
		t.Fatalf("%d, Request-Id %q", res.StatusCode, res.Header.Get("Request-Id"))
	}
	// The access log is JSON and names the request and its trace.
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(s.proc.Logs(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == "req_component" {
				if tid, _ := rec["trace_id"].(string); len(tid) != 32 || rec["service"] != "webhooks-svc" || rec["status"] != float64(200) {
					t.Fatalf("access log line %s", line)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access log line for req_component in\n%s", s.proc.Logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t)
	var newestFirst []string
	for range 25 {
		newestFirst = slices.Insert(newestFirst, 0, c.create(validBody).str("id"))
		c.otherMode().create(validBody) // never listed for c
	}
	page := func(query string) ([]string, bool) {
		t.Helper()
		r := c.do("GET", "/v1/webhook_endpoints"+query, "").wantOK(t)
		if r.body["object"] != "list" || r.body["url"] != "/v1/webhook_endpoints" {
			t.Fatalf("list object: %s", r.raw)
		}
		var out []string
		for _, d := range r.body["data"].([]any) {
			obj := d.(map[string]any)
			if _, ok := obj["secret"]; ok {
				t.Fatal("list shows the secret")
			}
			out = append(out, obj["id"].(string))
		}
		return out, r.body["has_more"].(bool)
	}

	var pages [][]string
	cursor := ""
	for i, wantMore := range []bool{true, true, false} {
		q := "?limit=10"
		if cursor != "" {
			q += "&starting_after=" + cursor
		}
		p, more := page(q)
		if more != wantMore {
			t.Fatalf("forward page %d has_more = %v", i+1, more)
		}
		pages = append(pages, p)
		cursor = p[len(p)-1]
	}
	if got := slices.Concat(pages...); !slices.Equal(got, newestFirst) {
		t.Fatalf("forward: %v\nwant %v", got, newestFirst)
	}
	for i, wantMore := range []bool{true, false} {
		p, more := page("?limit=10&ending_before=" + pages[2-i][0])
		if !slices.Equal(p, pages[1-i]) || more != wantMore {
			t.Fatalf("backward step %d = %v (has_more %v), want %v (%v)", i+1, p, more, pages[1-i], wantMore)
		}
	}
	if p, more := page(""); len(p) != 10 || !more {
		t.Fatalf("default limit: %d items, has_more %v", len(p), more)
	}
	if p, more := page("?limit=100"); len(p) != 25 || more {
		t.Fatalf("limit=100: %d items, has_more %v", len(p), more)
	}

	for _, tc := range []struct{ query, code, param string }{
		{"?limit=0", "parameter_invalid", "limit"},
		{"?limit=101", "parameter_invalid", "limit"},
		{"?limit=ten", "parameter_invalid", "limit"},
		{"?starting_after=evt_123", "parameter_invalid", "starting_after"},
		{"?starting_after=" + newestFirst[0] + "&ending_before=" + newestFirst[1], "parameters_exclusive", "ending_before"},
		{"?status=enabled", "parameter_unknown", "status"},
	} {
		c.do("GET", "/v1/webhook_endpoints"+tc.query, "").wantError(t, 400, "invalid_request_error", tc.code, tc.param)
	}

	// A cursor is a position, not a lookup: deleting the last endpoint of a page does not stop
	// the client from asking for the next page, and a foreign id pages only the caller's own.
	c.do("DELETE", "/v1/webhook_endpoints/"+pages[0][9], "").wantOK(t)
	if p, more := page("?limit=10&starting_after=" + pages[0][9]); !slices.Equal(p, pages[1]) || !more {
		t.Fatalf("after deleting the cursor: %v (has_more %v), want %v", p, more, pages[1])
	}
	foreign := c.otherMode().create(validBody).str("id")
	if p, more := page("?limit=10&ending_before=" + foreign); len(p) != 0 || more {
		t.Fatalf("a newer foreign cursor pages %v (has_more %v), want nothing newer", p, more)
	}
}

func TestIsolation(t *testing.T) {
	t.Parallel()
	s := start(t)
	owner := s.client(t)
	id := owner.create(validBody).str("id")
	for name, other := range map[string]*client{"other account": s.client(t), "other mode": owner.otherMode()} {
		t.Run(name, func(t *testing.T) {
			other := other.with(t)
			other.do("GET", "/v1/webhook_endpoints/"+id, "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
			other.do("POST", "/v1/webhook_endpoints/"+id, `{"status":"disabled"}`).wantError(t, 404, "invalid_request_error", "resource_missing", "id")
			other.do("DELETE", "/v1/webhook_endpoints/"+id, "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
			if r := other.do("GET", "/v1/webhook_endpoints", "").wantOK(t); len(r.body["data"].([]any)) != 0 {
				t.Fatalf("list shows another's endpoint: %s", r.raw)
			}
		})
	}
	if r := owner.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t); r.str("status") != "enabled" {
		t.Fatalf("owner's endpoint changed: %s", r.raw)
	}
	// Ids that cannot exist are simply not found.
	for _, bad := range []string{"nope", "evt_0000000000000000000000000a", "we_short", strings.ToUpper(id)} {
		owner.do("GET", "/v1/webhook_endpoints/"+bad, "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t)
	long := func(n int) string { return strings.Repeat("a", n) }
	metadata := func(n int) string {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf(`"k%d":"v"`, i))
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
	with := func(field string) string {
		return `{"url":"https://example.invalid/h","enabled_events":["*"],` + field + `}`
	}
	for _, tc := range []struct {
		name, body, code, param string
	}{
		{"url missing", `{"enabled_events":["*"]}`, "parameter_missing", "url"},
		{"url empty", `{"url":"","enabled_events":["*"]}`, "parameter_missing", "url"},
		{"url http", `{"url":"http://example.invalid/h","enabled_events":["*"]}`, "url_not_https", "url"},
		{"url no host", `{"url":"https://","enabled_events":["*"]}`, "parameter_invalid", "url"},
		{"url unparseable", `{"url":"https://exa mple.com","enabled_events":["*"]}`, "parameter_invalid", "url"},
		{"url too long", `{"url":"https://example.invalid/` + long(2048) + `","enabled_events":["*"]}`, "parameter_invalid", "url"},
		{"url not a string", `{"url":42,"enabled_events":["*"]}`, "parameter_invalid", "url"},
		{"events missing", `{"url":"https://example.invalid/h"}`, "parameter_missing", "enabled_events"},
		{"events null", `{"url":"https://example.invalid/h","enabled_events":null}`, "parameter_missing", "enabled_events"},
		{"events empty", `{"url":"https://example.invalid/h","enabled_events":[]}`, "parameter_invalid", "enabled_events"},
		{"events not an array", `{"url":"https://example.invalid/h","enabled_events":"*"}`, "parameter_invalid", "enabled_events"},
		{"event unknown", `{"url":"https://example.invalid/h","enabled_events":["*","charge.exploded"]}`, "parameter_invalid", "enabled_events[1]"},
		{"event not a string", `{"url":"https://example.invalid/h","enabled_events":["*",7]}`, "parameter_invalid", "enabled_events[1]"},
		{"description too long", with(`"description":"` + long(5001) + `"`), "parameter_invalid", "description"},
		{"api_version bad form", with(`"api_version":"2026-1-1"`), "parameter_invalid", "api_version"},
		{"api_version unsupported", with(`"api_version":"2020-01-01"`), "parameter_invalid", "api_version"},
		{"metadata not an object", with(`"metadata":"x"`), "parameter_invalid", "metadata"},
		{"metadata value not a string", with(`"metadata":{"n":1}`), "parameter_invalid", "metadata[n]"},
		{"metadata key too long", with(`"metadata":{"` + long(41) + `":"v"}`), "parameter_invalid", "metadata[" + long(41) + "]"},
		{"metadata value too long", with(`"metadata":{"k":"` + long(501) + `"}`), "parameter_invalid", "metadata[k]"},
		{"metadata too many keys", with(`"metadata":` + metadata(51)), "parameter_invalid", "metadata"},
		{"unknown parameter", with(`"secret":"whsec_mine"`), "parameter_unknown", "secret"},
		{"status on create", with(`"status":"disabled"`), "parameter_unknown", "status"},
		{"malformed JSON", `{"url":`, "body_invalid_json", ""},
		{"not an object", `["url"]`, "body_invalid_json", ""},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			c.with(t).do("POST", "/v1/webhook_endpoints", tc.body).wantError(t, 400, "invalid_request_error", tc.code, tc.param)
		})
	}
	if r := c.do("GET", "/v1/webhook_endpoints", "").wantOK(t); len(r.body["data"].([]any)) != 0 {
		t.Fatalf("a refused create stored something: %s", r.raw)
	}

	created := c.create(`{"url":"https://example.invalid/h","enabled_events":["*"],"metadata":{"a":"1"}}`)
	id := created.str("id")
	for _, tc := range []struct {
		name, body, code, param string
	}{
		{"url http", `{"url":"http://example.invalid"}`, "url_not_https", "url"},
		{"events empty", `{"enabled_events":[]}`, "parameter_invalid", "enabled_events"},
		{"event unknown", `{"enabled_events":["nope"]}`, "parameter_invalid", "enabled_events[0]"},
		{"status unknown", `{"status":"paused"}`, "parameter_invalid", "status"},
		{"description too long", `{"description":"` + long(5001) + `"}`, "parameter_invalid", "description"},
		{"metadata over the limit after merge", `{"metadata":` + metadata(50) + `}`, "parameter_invalid", "metadata"},
		{"api_version is fixed", `{"api_version":"` + events.APIVersion + `"}`, "parameter_unknown", "api_version"},
		{"unknown parameters", `{"secret":"x","colour":"red"}`, "parameter_unknown", "colour"},
		// Valid changes next to a bad one must not land.
		{"mixed good and bad", `{"description":"new","status":"paused"}`, "parameter_invalid", "status"},
	} {
		t.Run("update "+tc.name, func(t *testing.T) {
			c.with(t).do("POST", "/v1/webhook_endpoints/"+id, tc.body).wantError(t, 400, "invalid_request_error", tc.code, tc.param)
		})
	}
	delete(created.body, "secret")
	assertBody(t, c.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t), created.body)

	// Bad input is refused before the endpoint is looked up, so it is a 400 either way.
	c.do("POST", "/v1/webhook_endpoints/"+s.ids.New(ids.WebhookEndpoint), `{"status":"paused"}`).
		wantError(t, 400, "invalid_request_error", "parameter_invalid", "status")
}

func TestContentTypeAndJSON(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	c.send("POST", "/v1/webhook_endpoints", validBody, "text/plain", true).
		wantError(t, 415, "invalid_request_error", "unsupported_media_type", "")
	c.send("POST", "/v1/webhook_endpoints", "url=https://example.invalid", "application/x-www-form-urlencoded", true).
		wantError(t, 415, "invalid_request_error", "unsupported_media_type", "")
	c.send("POST", "/v1/webhook_endpoints", validBody, "application/json; charset=utf-8", true).wantOK(t)
	c.do("POST", "/v1/webhook_endpoints", `{"url": "https://example.invalid/h", "enabled_events": ["*"]`).
		wantError(t, 400, "invalid_request_error", "body_invalid_json", "")
	r := c.do("POST", "/v1/webhook_endpoints", `{"url":"https://example.invalid/h","enabled_events":["*"],"foo":1,"bar":2}`)
	r.wantError(t, 400, "invalid_request_error", "parameter_unknown", "bar")
	if msg := r.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "bar") || !strings.Contains(msg, "foo") {
		t.Fatalf("message %q should name both unknown parameters", msg)
	}
}

// Every route of the service requires the gateway's identity, for exactly the request signed.
func TestRequiresGatewayIdentity(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t)
	id := c.create(validBody).str("id")
	for _, target := range []string{"/v1/webhook_endpoints", "/v1/webhook_endpoints/" + id, "/v1/anything"} {
		c.send("GET", target, "", "", false).wantError(t, 401, "authentication_error", "internal_identity_invalid", "")
	}
	c.send("POST", "/v1/webhook_endpoints", validBody, "application/json", false).
		wantError(t, 401, "authentication_error", "internal_identity_invalid", "")

	// A signature made with another secret, or for another path, is refused too.
	other, _ := identity.NewSigner([]byte(strings.Repeat("x", 40)), nil)
	for _, tc := range []struct {
		signer *identity.Signer
		path   string
	}{{other, "/v1/webhook_endpoints/" + id}, {s.signer, "/v1/webhook_endpoints"}} {
		req, _ := http.NewRequest("GET", s.url+"/v1/webhook_endpoints/"+id, nil)
		tc.signer.Sign(req.Header.Set, identity.Identity{Account: c.account, RequestID: "req_x"}, "GET", tc.path)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Fatalf("signature for %s: %d, want 401", tc.path, res.StatusCode)
		}
	}
}

// assertBody compares a response with the expected object, field by field.
func assertBody(t *testing.T, r response, want map[string]any) {
	t.Helper()
	got, _ := json.Marshal(r.body)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Fatalf("body\n got %s\nwant %s", got, exp)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"INTERNAL_AUTH_SECRET":         "short",
		"LOG_LEVEL":                    "loud",
		"REDIS_URL":                    "http://nowhere",
		"WEBHOOKS_RETRY_SCHEDULE":      "5s,soon",
		"WEBHOOKS_TIMEOUT":             "0s",
		"WEBHOOKS_AUTO_DISABLE_AFTER":  "forever",
		"WEBHOOKS_ALLOW_PRIVATE":       "maybe",
		"WEBHOOKS_TLS_INSECURE":        "yes please",
		"EVENTS_RETENTION":             "-1h",
		"WEBHOOKS_CONCURRENCY":         "0",
		"OUTBOX_RELAY_INTERVAL":        "0",
		"WEBHOOKS_STREAM_MAX_DURATION": "60s",
		"WEBHOOKS_STREAM_RETENTION":    "never",
	}
	servicetest.RefusesConfig(t, run, env)
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(func(k string) string {
		if k == "INTERNAL_AUTH_SECRET" {
			return testSecret
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RedisURL != "redis://127.0.0.1:6379/0" || len(cfg.RetrySchedule) != 9 || cfg.RetrySchedule[8] != 24*time.Hour ||
		cfg.Timeout != 15*time.Second || cfg.AutoDisableAfter != 120*time.Hour || cfg.AllowPrivate || cfg.TLSInsecure ||
		cfg.EventsRetention != 720*time.Hour || cfg.Concurrency != 50 || cfg.OutboxRelayInterval != time.Second ||
		cfg.StreamHeartbeat != 10*time.Second || cfg.StreamMaxDuration != 50*time.Second || cfg.StreamRetention != time.Hour ||
		cfg.StreamMaxEvents != 10000 {
		t.Fatalf("defaults %+v", cfg)
	}
}

// BenchmarkGetEndpoint measures the hot path, GET /v1/webhook_endpoints/:id, directly at the
// service with a valid gateway identity, against whatever store testkit gives (the embedded
// one unless MONGODB_URI is set). Run with: go test -run '^$' -bench GetEndpoint .
func BenchmarkGetEndpoint(b *testing.B) {
	m := testkit.Mongo(b)
	p := servicetest.Start(b, run, map[string]string{
		"HTTP_ADDR":            "127.0.0.1:0",
		"MONGODB_URI":          m.URI,
		"MONGODB_DATABASE":     m.Database,
		"INTERNAL_AUTH_SECRET": testSecret,
		"REDIS_URL":            testkit.Redis(b),
		"LOG_LEVEL":            "warn",
	}, "http")
	signer, _ := identity.NewSigner([]byte(testSecret), nil)
	id := identity.Identity{Account: "acct_bench", RequestID: "req_bench"}
	do := func(method, path, body string) *http.Response {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, p.URL("http")+path, r)
		req.Header.Set("Content-Type", "application/json")
		signer.Sign(req.Header.Set, id, method, path)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	res := do("POST", "/v1/webhook_endpoints", validBody)
	var created struct{ ID string }
	if err := json.NewDecoder(res.Body).Decode(&created); err != nil || res.StatusCode != 200 {
		b.Fatalf("create: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	path := "/v1/webhook_endpoints/" + created.ID
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res := do("GET", path, "")
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
}
