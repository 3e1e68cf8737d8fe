package main

import (
	"encoding/json"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/servicetest"
)

// leak matches what an attempt's message shown to the API caller must never contain: an IPv4
// address, a port, and Go's resolver and dialer wording (which names the platform's DNS
// resolver and the address a name resolved to).
var leak = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|:\d+|(?i)\blookup\b|dial tcp|no such host|\[::`)

// TestRefusedAttemptShowsNoInternalAddress: an endpoint whose name resolves to an internal
// address (here a name from /etc/hosts that resolves only to 127.0.0.1, where a receiver
// listens) is refused by the guard at dial time. The API shows the category and the customer
// message, never the address the name resolved to; the log has the whole error with the ids
// needed to find it.
func TestRefusedAttemptShowsNoInternalAddress(t *testing.T) {
	t.Parallel()
	name := servicetest.LoopbackName()
	if name == "" {
		t.Skip("no name other than localhost resolves only to loopback on this machine (hostname, /etc/hosts)")
	}
	svc := start(t, "WEBHOOKS_ALLOW_PRIVATE", "false")
	c := svc.client(t)
	rc := newReceiver(t, always(200))
	_, port, _ := net.SplitHostPort(rc.srv.Listener.Addr().String())
	ep := c.createEndpoint("https://"+name+":"+port+"/hook", "webhook_endpoint.created")
	id := ep.str("id")

	var d map[string]any
	eventually(t, 10*time.Second, func() bool {
		ds := c.deliveries("/v1/webhook_endpoints/" + id + "/deliveries")
		if len(ds) == 1 && len(ds[0]["attempts"].([]any)) > 0 {
			d = ds[0]
			return true
		}
		return false
	}, "an attempt")
	if n := len(rc.all()); n != 0 {
		t.Fatalf("the guard let %d requests through to a name resolving to 127.0.0.1", n)
	}
	a := d["attempts"].([]any)[0].(map[string]any)
	msg, _ := a["error"].(string)
	if a["response_status"] != nil || a["error_code"] != "address_not_allowed" || msg == "" {
		t.Fatalf("attempt %v: want no status, error_code address_not_allowed and a message", a)
	}
	if m := leak.FindString(msg); m != "" {
		t.Fatalf("the attempt's message shows %q: %s", m, msg)
	}
	// Nor anywhere else in the response: no dotted address, and no host:port (a port in the
	// JSON's own `"key":value` has a quote before the colon).
	raw := c.do("GET", "/v1/webhook_endpoints/"+id+"/deliveries", "").wantOK(t).raw
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|dial tcp|(?i)\blookup\b`), regexp.MustCompile(`[^"]:` + port + `\b`)} {
		if m := re.Find(raw); m != nil {
			t.Fatalf("the API response shows %q: %s", m, raw)
		}
	}

	// The log has the whole error, once per attempt, with the delivery, event, endpoint, the
	// request that raised the event, and the trace.
	evID, _ := d["event"].(string)
	reqID, _ := c.do("GET", "/v1/events/"+evID, "").wantOK(t).body["request"].(map[string]any)["id"].(string)
	var rec map[string]any
	eventually(t, 20*time.Second, func() bool {
		rec = nil
		for _, line := range strings.Split(svc.proc.Logs(), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == "webhook delivery attempt failed" &&
				r["delivery"] == d["id"] && r["attempt"] == float64(1) {
				if rec != nil {
					t.Fatalf("the first attempt is logged twice:\n%v\n%v", rec, r)
				}
				rec = r
			}
		}
		return rec != nil
	}, "the attempt's log line")
	t.Logf("logged: %v", rec)
	errText, _ := rec["error"].(string)
	if rec["event"] != evID || rec["endpoint"] != id || rec["request_id"] != reqID || reqID == "" ||
		rec["error_code"] != "address_not_allowed" || len(rec["trace_id"].(string)) != 32 ||
		!strings.Contains(errText, "127.0.0.1") {
		t.Fatalf("log line %v: want event %s, endpoint %s, request %s, a trace id and the whole error", rec, evID, id, reqID)
	}
}
