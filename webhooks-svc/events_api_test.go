package main

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEventsListFilters(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	good := newReceiver(t, always(200))
	bad := newReceiver(t, always(500))

	// e1: created of G, delivered to G. e2: created of B, delivered to G only. e3: updated of
	// B, delivered to G (succeeds) and B (fails). e4: deleted of B, delivered to nobody.
	g := c.createEndpoint(good.url(), "webhook_endpoint.created", "webhook_endpoint.updated").str("id")
	b := c.createEndpoint(bad.url(), "webhook_endpoint.updated").str("id")
	updated := c.do("POST", "/v1/webhook_endpoints/"+b, `{"description":"renamed"}`).wantOK(t)
	var all []string
	eventually(t, 20*time.Second, func() bool { all = c.eventIDs(""); return len(all) == 3 }, "three events")
	e3, e2, e1 := all[0], all[1], all[2]

	// While B's delivery of e3 is being retried, e3 is not delivered.
	if got := c.eventIDs("?delivery_success=false"); !slices.Contains(got, e3) {
		t.Fatalf("delivery_success=false while pending: %v", got)
	}
	c.do("DELETE", "/v1/webhook_endpoints/"+b, "").wantOK(t)
	eventually(t, 20*time.Second, func() bool { all = c.eventIDs(""); return len(all) == 4 }, "four events")
	e4 := all[0]
	// B's delivery of e3 has failed, by running out of retries or because B was deleted.
	ev3 := c.do("GET", "/v1/events/"+e3, "").wantOK(t)
	eventually(t, 20*time.Second, func() bool {
		ev3 = c.do("GET", "/v1/events/"+e3, "").wantOK(t)
		return ev3.body["pending_webhooks"] == float64(0)
	}, "e3 to have no pending delivery")

	eventually(t, 20*time.Second, func() bool {
		return slices.Equal(c.eventIDs("?delivery_success=true"), []string{e4, e2, e1})
	}, "e1, e2 (delivered) and e4 (nothing to deliver) to count as delivered")
	if got := c.eventIDs("?delivery_success=false"); !slices.Equal(got, []string{e3}) {
		t.Fatalf("delivery_success=false: %v, want [%s]", got, e3)
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{e4, e3, e2, e1}},
		{"?type=webhook_endpoint.updated", []string{e3}},
		{"?type=webhook_endpoint.*", []string{e4, e3, e2, e1}},
		{"?type=payment_request.*", nil},
		{"?types[]=webhook_endpoint.created&types[]=webhook_endpoint.deleted", []string{e4, e2, e1}},
		{"?types[0]=webhook_endpoint.deleted&types[1]=webhook_endpoint.updated", []string{e4, e3}},
		{"?type=webhook_endpoint.created&delivery_success=true", []string{e2, e1}},
		{"?limit=2", []string{e4, e3}},
		{"?limit=2&starting_after=" + e3, []string{e2, e1}},
		{"?ending_before=" + e2, []string{e4, e3}},
		{"?created[gte]=" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), nil},
		{"?created[lte]=" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), []string{e4, e3, e2, e1}},
	} {
		if got := c.eventIDs(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	for _, tc := range []struct{ query, code, param string }{
		{"?type=webhook_endpoint.created&types[]=webhook_endpoint.updated", "parameters_exclusive", "types"},
		{"?type=charge.exploded", "parameter_invalid", "type"},
		{"?type=rocket.*", "parameter_invalid", "type"},
		{"?types[]=webhook_endpoint.*", "parameter_invalid", "types[0]"},
		{"?delivery_success=yes", "parameter_invalid", "delivery_success"},
		{"?created[gte]=yesterday", "parameter_invalid", "created[gte]"},
		{"?starting_after=we_123", "parameter_invalid", "starting_after"},
		{"?status=pending", "parameter_unknown", "status"},
	} {
		c.do("GET", "/v1/events"+tc.query, "").wantError(t, 400, "invalid_request_error", tc.code, tc.param)
	}

	// The events: created / updated with previous attributes / deleted, each naming the
	// request that caused it.
	ev := c.do("GET", "/v1/events/"+e3, "").wantOK(t)
	data := ev.body["data"].(map[string]any)
	if ev.str("type") != "webhook_endpoint.updated" || data["object"].(map[string]any)["description"] != "renamed" ||
		data["previous_attributes"].(map[string]any)["description"] != nil || len(data["previous_attributes"].(map[string]any)) != 1 ||
		ev.body["request"].(map[string]any)["id"] == nil {
		t.Fatalf("updated event %s", ev.raw)
	}
	if !reflect.DeepEqual(updated.body, data["object"]) {
		t.Fatalf("the update answered %s, its event's object is %v", updated.raw, data["object"])
	}
	ev = c.do("GET", "/v1/events/"+e4, "").wantOK(t)
	if ev.str("type") != "webhook_endpoint.deleted" || ev.body["data"].(map[string]any)["object"].(map[string]any)["id"] != b ||
		ev.body["pending_webhooks"] != float64(0) {
		t.Fatalf("deleted event %s", ev.raw)
	}
	if _, ok := c.do("GET", "/v1/events/"+e1, "").wantOK(t).body["data"].(map[string]any)["previous_attributes"]; ok {
		t.Fatal("a created event has previous_attributes")
	}
	_ = g
	for _, bad := range []string{"evt_nope", "we_00000000000000000000000000", c.svc.ids.New("evt_")} {
		c.do("GET", "/v1/events/"+bad, "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
	}
}

func TestDeliveriesListAndRetry(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	var fail = true
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	rc := newReceiver(t, func(int, received) int {
		<-mu
		defer func() { mu <- struct{}{} }()
		if fail {
			return 500
		}
		return 200
	})
	id := c.createEndpoint(rc.url(), "*").str("id")
	for i := range 3 {
		c.do("POST", "/v1/webhook_endpoints/"+id, `{"description":"v`+strconv.Itoa(i)+`"}`).wantOK(t)
	}
	// created + 3 updated, each tried 4 times.
	var ds []map[string]any
	eventually(t, 10*time.Second, func() bool {
		ds = c.deliveries("/v1/webhook_endpoints/" + id + "/deliveries")
		if len(ds) != 4 {
			return false
		}
		for _, d := range ds {
			if d["status"] != "failed" {
				return false
			}
		}
		return true
	}, "four failed deliveries")
	for _, d := range ds {
		if len(d["attempts"].([]any)) != 4 || d["next_attempt_at"] != nil {
			t.Fatalf("failed delivery %v", d)
		}
	}
	if !slices.IsSortedFunc(ds, func(a, b map[string]any) int { return strings.Compare(b["id"].(string), a["id"].(string)) }) {
		t.Fatal("deliveries are not newest first")
	}
	r := c.do("GET", "/v1/webhook_endpoints/"+id+"/deliveries?limit=3", "").wantOK(t)
	if len(r.body["data"].([]any)) != 3 || r.body["has_more"] != true || r.str("url") != "/v1/webhook_endpoints/"+id+"/deliveries" {
		t.Fatalf("page: %s", r.raw)
	}
	r = c.do("GET", "/v1/webhook_endpoints/"+id+"/deliveries?limit=3&starting_after="+ds[2]["id"].(string), "").wantOK(t)
	if data := r.body["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != ds[3]["id"] || r.body["has_more"] != false {
		t.Fatalf("second page: %s", r.raw)
	}
	c.do("GET", "/v1/webhook_endpoints/"+id+"/deliveries?starting_after=evt_1", "").
		wantError(t, 400, "invalid_request_error", "parameter_invalid", "starting_after")

	// Retry the oldest (the created event's) now that the receiver answers 200.
	<-mu
	fail = false
	mu <- struct{}{}
	target := ds[3]
	evID := target["event"].(string)
	retried := c.do("POST", "/v1/webhook_deliveries/"+target["id"].(string)+"/retry", "").wantOK(t)
	if retried.str("status") != "pending" || retried.body["next_attempt_at"] == nil || retried.str("id") != target["id"] {
		t.Fatalf("retry: %s", retried.raw)
	}
	eventually(t, 20*time.Second, func() bool {
		d := c.deliveries("/v1/events/" + evID + "/deliveries")
		return len(d) == 1 && d[0]["status"] == "succeeded" && len(d[0]["attempts"].([]any)) == 5
	}, "the retried delivery to succeed on a fifth attempt")
	eventually(t, 20*time.Second, func() bool {
		return slices.Contains(c.eventIDs("?delivery_success=true"), evID)
	}, "the event to count as delivered")

	// Retrying a succeeded delivery sends it once more.
	before := len(rc.all())
	c.do("POST", "/v1/webhook_deliveries/"+target["id"].(string)+"/retry", "").wantOK(t)
	eventually(t, 20*time.Second, func() bool { return len(rc.all()) == before+1 }, "one more request")

	// Someone else's delivery, or a malformed id, is not found; a disabled endpoint's is refused.
	c.svc.client(t).do("POST", "/v1/webhook_deliveries/"+target["id"].(string)+"/retry", "").
		wantError(t, 404, "invalid_request_error", "resource_missing", "id")
	c.do("POST", "/v1/webhook_deliveries/wd_nope/retry", "").wantError(t, 404, "invalid_request_error", "resource_missing", "id")
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"status":"disabled"}`).wantOK(t)
	c.do("POST", "/v1/webhook_deliveries/"+target["id"].(string)+"/retry", "").wantError(t, 400, "invalid_request_error", "invalid_state", "")
	c.do("POST", "/v1/webhook_deliveries/"+target["id"].(string)+"/retry", `{"now":true}`).
		wantError(t, 400, "invalid_request_error", "parameter_unknown", "now")
}

func TestReenablingResumesPendingDeliveries(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, _ received) int {
		if n == 1 {
			<-release
			return 503
		}
		return 200
	})
	id := c.createEndpoint(rc.url(), "webhook_endpoint.created").str("id")
	rc.waitFor(t, "", 1)
	// Disable while the first attempt is in flight; it fails, and the retry finds the endpoint
	// disabled: no request, the delivery waits without a next attempt.
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"status":"disabled"}`).wantOK(t)
	close(release)
	var ds []map[string]any
	eventually(t, 20*time.Second, func() bool {
		ds = c.deliveries("/v1/webhook_endpoints/" + id + "/deliveries")
		return len(ds) == 1 && len(ds[0]["attempts"].([]any)) == 1 && ds[0]["next_attempt_at"] == nil
	}, "the delivery to wait")
	time.Sleep(300 * time.Millisecond)
	if ds = c.deliveries("/v1/webhook_endpoints/" + id + "/deliveries"); ds[0]["status"] != "pending" || len(rc.all()) != 1 {
		t.Fatalf("while disabled: %v, %d requests", ds[0], len(rc.all()))
	}
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"status":"enabled"}`).wantOK(t)
	eventually(t, 20*time.Second, func() bool {
		ds = c.deliveries("/v1/webhook_endpoints/" + id + "/deliveries")
		return len(ds) == 1 && ds[0]["status"] == "succeeded"
	}, "the delivery to resume and succeed")
	if got := attemptStatuses(ds[0]); !slices.Equal(got, []any{float64(503), float64(200)}) {
		t.Fatalf("attempts %v", got)
	}
}

func TestAutoDisable(t *testing.T) {
	t.Parallel()
	c := start(t, "WEBHOOKS_AUTO_DISABLE_AFTER", "250ms").client(t)
	rc := newReceiver(t, always(500))
	id := c.createEndpoint(rc.url(), "webhook_endpoint.created").str("id")
	eventually(t, 20*time.Second, func() bool {
		return c.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t).str("status") == "disabled"
	}, "the failing endpoint to be disabled")
	eventually(t, 20*time.Second, func() bool {
		return len(c.eventIDs("?type=webhook_endpoint.disabled")) == 1
	}, "webhook_endpoint.disabled")
}

func TestPrivateURLsAreRefused(t *testing.T) {
	t.Parallel()
	c := start(t, "WEBHOOKS_ALLOW_PRIVATE", "").client(t)
	for _, host := range []string{
		"127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "0x7f000001", "0.0.0.0", "[::]",
		"10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "[fd00::1]", "[fe80::1]",
		"224.0.0.1", "localhost", "api.localhost", "LOCALHOST",
	} {
		c.do("POST", "/v1/webhook_endpoints", `{"url":"https://`+host+`/hook","enabled_events":["*"]}`).
			wantError(t, 400, "invalid_request_error", "url_not_allowed", "url")
	}
	// Address forms that resolvers read differently, and a trailing dot, do not pass the URL
	// parser at all (libs/validate.ParseHTTPSURL).
	for _, host := range []string{"2130706433", "017700000001", "0177.0.0.1", "127.1", "LOCALHOST."} {
		c.do("POST", "/v1/webhook_endpoints", `{"url":"https://`+host+`/hook","enabled_events":["*"]}`).
			wantError(t, 400, "invalid_request_error", "parameter_invalid", "url")
	}
	id := c.createEndpoint("https://example.invalid/hook", "*").str("id")
	c.do("POST", "/v1/webhook_endpoints/"+id, `{"url":"https://192.168.0.10/"}`).
		wantError(t, 400, "invalid_request_error", "url_not_allowed", "url")

	// Where a name leads is checked on every connection instead (libs/netguard and
	// internal/adapters/webhookhttp test a name resolving to loopback, and redirects).
}
