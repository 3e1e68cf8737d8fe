package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Component tests of events and deliveries: endpoints are created through the API, their own
// webhook_endpoint.* events flow through the outbox, Redis and the event store, and arrive at
// TLS receivers on 127.0.0.1.

// received is one delivery as a receiver saw it.
type received struct {
	header http.Header
	body   []byte
	event  map[string]any
}

func (r received) eventType() string { s, _ := r.event["type"].(string); return s }

// receiver is a TLS webhook receiver; respond picks the status of the n-th request (1-based).
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []received
	respond func(n int, r received) int
}

func newReceiver(t *testing.T, respond func(n int, r received) int) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r := received{header: req.Header.Clone(), body: body}
		_ = json.Unmarshal(body, &r.event)
		rc.mu.Lock()
		rc.got = append(rc.got, r)
		n := len(rc.got)
		rc.mu.Unlock()
		w.WriteHeader(rc.respond(n, r))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func always(status int) func(int, received) int { return func(int, received) int { return status } }

func (rc *receiver) url() string { return rc.srv.URL + "/hook" }

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// waitFor waits until the receiver has n deliveries of type typ ("" any) and returns them.
func (rc *receiver) waitFor(t *testing.T, typ string, n int) []received {
	t.Helper()
	var out []received
	eventually(t, 10*time.Second, func() bool {
		out = nil
		for _, r := range rc.all() {
			if typ == "" || r.eventType() == typ {
				out = append(out, r)
			}
		}
		return len(out) >= n
	}, "%d deliveries of %q", n, typ)
	return out
}

func eventually(t *testing.T, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+format, args...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// verifySignature checks a delivery as the Standard Webhooks specification tells a receiver to
// (written from the specification, not from the service's code): the key is the base64 after
// whsec_, the signed content "{webhook-id}.{webhook-timestamp}.{body}", and any of the
// space-separated "v1,<base64 HMAC-SHA256>" signatures may match.
func verifySignature(secret string, r received) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return false
	}
	ts, err := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", r.header.Get("webhook-id"), ts)
	mac.Write(r.body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(r.header.Get("webhook-signature")) {
		v, b64, _ := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if v == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

func (c *client) createEndpoint(url string, events ...string) response {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"url": url, "enabled_events": events})
	return c.create(string(b))
}

// deliveries lists the deliveries at path (…/deliveries), newest first.
func (c *client) deliveries(path string) []map[string]any {
	c.t.Helper()
	r := c.do("GET", path+"?limit=100", "").wantOK(c.t)
	var out []map[string]any
	for _, d := range r.body["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

// eventIDs lists the ids of the events the query selects.
func (c *client) eventIDs(query string) []string {
	c.t.Helper()
	r := c.do("GET", "/v1/events"+query, "").wantOK(c.t)
	var out []string
	for _, e := range r.body["data"].([]any) {
		out = append(out, e.(map[string]any)["id"].(string))
	}
	return out
}

func attemptStatuses(d map[string]any) []any {
	var out []any
	for _, a := range d["attempts"].([]any) {
		out = append(out, a.(map[string]any)["response_status"])
	}
	return out
}

func TestDeliveryIsSignedAndRecorded(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	rc := newReceiver(t, always(200))
	ep := c.createEndpoint(rc.url(), "*")
	id, secret := ep.str("id"), ep.str("secret")

	got := rc.waitFor(t, "webhook_endpoint.created", 1)[0]
	if !verifySignature(secret, got) {
		t.Fatalf("signature does not verify: %v", got.header)
	}
	h := got.header
	if h.Get("Content-Type") != "application/json" || h.Get("User-Agent") != "RentalPlatform-Webhooks/1.0" ||
		!strings.HasPrefix(h.Get("webhook-id"), "evt_") || h.Get("webhook-id") != got.event["id"] {
		t.Fatalf("headers %v", h)
	}
	obj := got.event["data"].(map[string]any)["object"].(map[string]any)
	req := got.event["request"].(map[string]any)
	if obj["id"] != id || obj["object"] != "webhook_endpoint" || obj["secret"] != nil || got.event["object"] != "event" ||
		got.event["account"] != nil || !strings.HasPrefix(req["id"].(string), "req_") || req["idempotency_key"] != nil {
		t.Fatalf("delivered event %s", got.body)
	}

	// The event is stored and shown as delivered.
	evID := h.Get("webhook-id")
	var ev response
	eventually(t, 20*time.Second, func() bool {
		ev = c.do("GET", "/v1/events/"+evID, "").wantOK(t)
		return ev.body["pending_webhooks"] == float64(0)
	}, "pending_webhooks 0")
	if ev.str("type") != "webhook_endpoint.created" || ev.body["data"].(map[string]any)["object"].(map[string]any)["id"] != id {
		t.Fatalf("GET event: %s", ev.raw)
	}
	ds := c.deliveries("/v1/events/" + evID + "/deliveries")
	if len(ds) != 1 || ds[0]["status"] != "succeeded" || ds[0]["webhook_endpoint"] != id || ds[0]["event"] != evID ||
		ds[0]["object"] != "webhook_delivery" || ds[0]["next_attempt_at"] != nil || !slices.Equal(attemptStatuses(ds[0]), []any{float64(200)}) {
		t.Fatalf("deliveries %v", ds)
	}
	a := ds[0]["attempts"].([]any)[0].(map[string]any)
	if a["error"] != nil || a["attempted_at"].(float64) < float64(time.Now().Add(-time.Minute).Unix()) || a["duration_ms"].(float64) < 0 {
		t.Fatalf("attempt %v", a)
	}
	// Another account or mode sees neither the event nor its deliveries.
	for _, other := range []*client{c.svc.client(t), c.otherMode()} {
		other.do("GET", "/v1/events/"+evID, "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
		other.do("GET", "/v1/events/"+evID+"/deliveries", "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
		other.do("GET", "/v1/webhook_endpoints/"+id+"/deliveries", "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
		if ids := other.eventIDs(""); len(ids) != 0 {
			t.Fatalf("another account or mode lists %v", ids)
		}
	}
}

func TestFailingReceiverIsRetried(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	rc := newReceiver(t, func(n int, _ received) int {
		if n <= 3 {
			return 500
		}
		return 200
	})
	id := c.createEndpoint(rc.url(), "webhook_endpoint.created").str("id")
	got := rc.waitFor(t, "", 4)
	for _, r := range got[1:] {
		if r.header.Get("webhook-id") != got[0].header.Get("webhook-id") || string(r.body) != string(got[0].body) {
			t.Fatalf("a retry differs from the first attempt: %v vs %v", r.header, got[0].header)
		}
	}
	var ds []map[string]any
	eventually(t, 20*time.Second, func() bool {
		ds = c.deliveries("/v1/webhook_endpoints/" + id + "/deliveries")
		return len(ds) == 1 && ds[0]["status"] == "succeeded"
	}, "the delivery to succeed")
	if want := []any{float64(500), float64(500), float64(500), float64(200)}; !slices.Equal(attemptStatuses(ds[0]), want) {
		t.Fatalf("attempts %v, want statuses %v", ds[0]["attempts"], want)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(rc.all()); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}
}

func TestGoneDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	rc := newReceiver(t, always(410))
	id := c.createEndpoint(rc.url(), "*").str("id")
	rc.waitFor(t, "webhook_endpoint.created", 1)
	eventually(t, 20*time.Second, func() bool {
		return c.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t).str("status") == "disabled"
	}, "the endpoint to be disabled")
	var disabled []string
	eventually(t, 20*time.Second, func() bool {
		disabled = c.eventIDs("?type=webhook_endpoint.disabled")
		return len(disabled) == 1
	}, "webhook_endpoint.disabled")
	ev := c.do("GET", "/v1/events/"+disabled[0], "").wantOK(t)
	data := ev.body["data"].(map[string]any)
	// The platform's own work: the previous status alone, and no request.
	if prev := data["previous_attributes"].(map[string]any); data["object"].(map[string]any)["status"] != "disabled" ||
		prev["status"] != "enabled" || len(prev) != 1 ||
		ev.body["request"].(map[string]any)["id"] != nil || ev.body["request"].(map[string]any)["idempotency_key"] != nil {
		t.Fatalf("disabled event %s", ev.raw)
	}
	ds := c.deliveries("/v1/webhook_endpoints/" + id + "/deliveries")
	if len(ds) != 1 || ds[0]["status"] != "failed" || !slices.Equal(attemptStatuses(ds[0]), []any{float64(410)}) {
		t.Fatalf("deliveries %v", ds)
	}
	// A disabled endpoint receives nothing more, not even its own disabled event.
	time.Sleep(300 * time.Millisecond)
	if n := len(rc.all()); n != 1 {
		t.Fatalf("%d requests to a disabled endpoint", n)
	}
}

func TestSecretRotation(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	rc := newReceiver(t, always(200))
	ep := c.createEndpoint(rc.url(), "webhook_endpoint.updated")
	id, oldSecret := ep.str("id"), ep.str("secret")

	for _, tc := range []struct{ body, param string }{
		{`{"expires_in":604801}`, "expires_in"}, {`{"expires_in":-1}`, "expires_in"},
		{`{"expires_in":"soon"}`, "expires_in"}, {`{"secret":"mine"}`, "secret"},
	} {
		r := c.do("POST", "/v1/webhook_endpoints/"+id+"/rotate_secret", tc.body)
		if r.status != 400 || r.body["error"].(map[string]any)["param"] != tc.param {
			t.Fatalf("rotate %s: %d %s", tc.body, r.status, r.raw)
		}
	}
	rotated := c.do("POST", "/v1/webhook_endpoints/"+id+"/rotate_secret", `{"expires_in":3600}`).wantOK(t)
	newSecret := rotated.str("secret")
	if rotated.str("id") != id || !strings.HasPrefix(newSecret, "whsec_") || newSecret == oldSecret {
		t.Fatalf("rotate: %s", rotated.raw)
	}
	if _, shown := c.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t).body["secret"]; shown {
		t.Fatal("GET shows the new secret")
	}
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"description":"after rotation"}`).wantOK(t)
	got := rc.waitFor(t, "webhook_endpoint.updated", 1)[0]
	sigs := strings.Fields(got.header.Get("webhook-signature"))
	if len(sigs) != 2 {
		t.Fatalf("signature header %q, want two signatures", got.header.Get("webhook-signature"))
	}
	for _, secret := range []string{newSecret, oldSecret} {
		if !verifySignature(secret, got) {
			t.Fatalf("a receiver with %s rejects the delivery", secret)
		}
	}
	// The new secret signs first; each signature alone verifies with its own secret.
	first, second := got, got
	first.header, second.header = got.header.Clone(), got.header.Clone()
	first.header.Set("webhook-signature", sigs[0])
	second.header.Set("webhook-signature", sigs[1])
	if !verifySignature(newSecret, first) || !verifySignature(oldSecret, second) {
		t.Fatal("signatures are not new first, old second")
	}

	// expires_in 0 retires the old secret at once; the default (no body) keeps it.
	newest := c.do("POST", "/v1/webhook_endpoints/"+id+"/rotate_secret", `{"expires_in":0}`).wantOK(t).str("secret")
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"description":"single"}`).wantOK(t)
	got = rc.waitFor(t, "webhook_endpoint.updated", 2)[1]
	if sigs := strings.Fields(got.header.Get("webhook-signature")); len(sigs) != 1 || !verifySignature(newest, got) || verifySignature(newSecret, got) {
		t.Fatalf("after expires_in 0: %q", got.header.Get("webhook-signature"))
	}
	c.do("POST", "/v1/webhook_endpoints/"+id+"/rotate_secret", "").wantOK(t)
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"description":"default overlap"}`).wantOK(t)
	got = rc.waitFor(t, "webhook_endpoint.updated", 3)[2]
	if !verifySignature(newest, got) || len(strings.Fields(got.header.Get("webhook-signature"))) != 2 {
		t.Fatalf("default rotation does not keep the old secret: %q", got.header.Get("webhook-signature"))
	}
	c.do("POST", "/v1/webhook_endpoints/we_00000000000000000000000000/rotate_secret", "").
		wantError(t, 404, "invalid_request_error", "resource_missing", "id")
}
