package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeWebhooks answers the calls of resend and of trigger's catalogue look-up: the deliveries
// of evt_1 (two pages: wd_1 to we_a, wd_2 to a disabled we_b; wd_3 to the event's own
// webhook_url), their retries, and the balance family of the catalogue.
func fakeWebhooks(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		switch p := r.URL.Path; {
		case p == "/v1/events/evt_1/deliveries" && r.URL.Query().Get("starting_after") == "":
			io.WriteString(w, `{"object":"list","data":[{"id":"wd_1","webhook_endpoint":"we_a"},{"id":"wd_2","webhook_endpoint":"we_b"}],"has_more":true}`)
		case p == "/v1/events/evt_1/deliveries":
			io.WriteString(w, `{"object":"list","data":[{"id":"wd_3","webhook_endpoint":null}],"has_more":false}`)
		case p == "/v1/events/evt_none/deliveries":
			io.WriteString(w, `{"object":"list","data":[],"has_more":false}`)
		case p == "/v1/webhook_deliveries/wd_2/retry":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"invalid_state","message":"The endpoint is disabled."}}`)
		case strings.HasPrefix(p, "/v1/webhook_deliveries/") && r.Method == "POST":
			fmt.Fprintf(w, `{"id":%q,"object":"webhook_delivery"}`, strings.Split(p, "/")[3])
		case p == "/v1/event_types" && r.URL.Query().Get("family") == "balance":
			io.WriteString(w, `{"object":"list","data":[{"id":"balance.available","emitted":false,"description":"Reserved."}]}`)
		case p == "/v1/event_types":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"parameter_invalid","param":"family"}}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such thing."}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// runWith runs the CLI against base with key, returning the exit status and outputs.
func runWith(t *testing.T, base, key string, argv ...string) (int, string, string) {
	t.Helper()
	env := map[string]string{"RENTAL_API_BASE": base, "RENTAL_API_KEY": key, "RENTAL_CONFIG_FILE": t.TempDir() + "/none.json"}
	var out, errOut strings.Builder
	code := run(t.Context(), argv, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestResendRetriesEveryDeliveryAndSkipsDisabledEndpoints(t *testing.T) {
	base, seen := fakeWebhooks(t)
	code, out, errOut := runWith(t, base, "sk_test_k", "events", "resend", "evt_1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if out != `{"object":"list","data":[{"id":"wd_1","object":"webhook_delivery"},{"id":"wd_3","object":"webhook_delivery"}]}`+"\n" {
		t.Errorf("stdout %q", out)
	}
	want := "Retried wd_1 to we_a\nSkipped wd_2 to we_b: The endpoint is disabled.\nRetried wd_3 to the event's own webhook_url\n"
	if errOut != want {
		t.Errorf("stderr %q\nwant   %q", errOut, want)
	}
	calls := seen()
	if len(calls) != 5 || !strings.HasPrefix(calls[1], "GET /v1/events/evt_1/deliveries?limit=100&starting_after=wd_2 ") {
		t.Fatalf("calls %q", calls)
	}
	// Each retry has its own Idempotency-Key.
	keys := map[string]bool{}
	for _, c := range calls[2:] {
		f := strings.Fields(c)
		if len(f) != 3 || !strings.HasPrefix(f[2], "cli_") || keys[f[2]] {
			t.Errorf("retry without a key of its own: %q", c)
		}
		keys[f[2]] = true
	}
}

func TestResendToOneEndpoint(t *testing.T) {
	base, _ := fakeWebhooks(t)
	if code, out, _ := runWith(t, base, "sk_test_k", "events", "resend", "evt_1", "--webhook-endpoint", "we_a", "--json"); code != 0 ||
		out != `{"object":"list","data":[{"id":"wd_1","object":"webhook_delivery"}]}`+"\n" {
		t.Errorf("resend to we_a: %d %q", code, out)
	}
	// To one endpoint, a refusal is a failure.
	if code, _, errOut := runWith(t, base, "sk_test_k", "events", "resend", "evt_1", "--webhook-endpoint", "we_b"); code != 1 || !strings.Contains(errOut, "retrying wd_2: 400") {
		t.Errorf("resend to a disabled we_b: %d %q", code, errOut)
	}
	if code, _, errOut := runWith(t, base, "sk_test_k", "events", "resend", "evt_1", "--webhook-endpoint", "we_c"); code != 1 || !strings.Contains(errOut, "has no delivery to we_c") {
		t.Errorf("resend to we_c: %d %q", code, errOut)
	}
	if code, _, errOut := runWith(t, base, "sk_test_k", "events", "resend", "evt_none"); code != 1 || !strings.Contains(errOut, "has no deliveries") {
		t.Errorf("resend of an event without deliveries: %d %q", code, errOut)
	}
	if code, out, errOut := runWith(t, base, "sk_test_k", "events", "get", "evt_2"); code != 1 || !strings.Contains(out, `"code": "resource_missing"`) || !strings.Contains(errOut, "404") {
		t.Errorf("get a missing event: %d %q %q", code, out, errOut)
	}
}

func TestListQueries(t *testing.T) {
	base, seen := fakeWebhooks(t)
	runWith(t, base, "sk_test_k", "events", "list", "--type", "payment_request.*", "--limit", "3", "--starting-after", "evt_9")
	runWith(t, base, "sk_test_k", "events", "list")
	runWith(t, base, "sk_test_k", "deliveries", "list", "--event", "evt_1", "--endpoint", "we_a", "--status", "failed")
	runWith(t, base, "sk_test_k", "deliveries", "retry", "wd_9")
	want := []string{
		"GET /v1/events?limit=3&starting_after=evt_9&type=payment_request.%2A ",
		"GET /v1/events ",
		"GET /v1/webhook_deliveries?endpoint=we_a&event=evt_1&status=failed ",
		"POST /v1/webhook_deliveries/wd_9/retry cli_",
	}
	calls := seen()
	if len(calls) != len(want) {
		t.Fatalf("calls %q", calls)
	}
	for i, w := range want {
		if !strings.HasPrefix(calls[i], w) {
			t.Errorf("call %d: %q, want %q", i, calls[i], w)
		}
	}
}

func TestUsageErrorsSendNothing(t *testing.T) {
	base, seen := fakeWebhooks(t)
	for _, argv := range [][]string{
		{"events", "get", "wd_1"},
		{"events", "get", "evt_1/../x"},
		{"events", "get"},
		{"events", "resend", "evt_1", "--webhook-endpoint", "wd_1"},
		{"events", "list", "--limit", "ten"},
		{"events"},
		{"deliveries", "retry", "evt_1"},
		{"deliveries", "nope"},
		{"trigger", "charge.failed", "--gone-url", "https://example.com/gone"},
		{"trigger", "webhook_endpoint.disabled"},
	} {
		if code, _, errOut := runWith(t, base, "sk_test_k", argv...); code != 2 {
			t.Errorf("%q: exit %d (%s), want 2", argv, code, errOut)
		}
	}
	if code, out, errOut := runWith(t, base, "rk_live_k", "trigger", "charge.failed"); code != 2 || out != "" || !strings.Contains(errOut, "rk_live_… is a live key") {
		t.Errorf("a live key: %d %q %q", code, out, errOut)
	}
	if calls := seen(); len(calls) != 0 {
		t.Errorf("calls made: %q", calls)
	}
}

func TestTriggerNamesTypesItCannotCause(t *testing.T) {
	base, _ := fakeWebhooks(t)
	for argv, want := range map[string]string{
		"balance.available": "balance.available is reserved, never emitted by the platform, so nothing can trigger it (Reserved.)",
		"balance.nope":      `"balance.nope" is not an event type`,
		"nope.nope":         `"nope.nope" is not an event type`,
	} {
		if code, _, errOut := runWith(t, base, "sk_test_k", "trigger", argv); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("trigger %s: %d %q, want %q", argv, code, errOut, want)
		}
	}
}

func TestTriggerListIsPlainIntoABuffer(t *testing.T) {
	code, out, _ := runWith(t, "http://127.0.0.1:1", "sk_test_k", "trigger", "--list")
	if code != 0 || strings.Contains(out, "\x1b[") || !strings.Contains(out, "  webhook_endpoint.disabled  ") || !strings.Contains(out, "(needs --gone-url)") {
		t.Errorf("trigger --list: %d %q", code, out)
	}
}
