package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestWebhookEndpointsThroughTheGateway(t *testing.T) {
	p := start(t)
	keyA := p.newKey(t, "acct_a", false)
	keyALive := p.newKey(t, "acct_a", true)
	keyB := p.newKey(t, "acct_b", false)
	base := p.GatewayURL + "/v1/webhook_endpoints"

	t.Run("dev key seeded", func(t *testing.T) {
		res := call(t, "GET", base, p.DevAPIKey, nil)
		if res.Status != 200 {
			t.Fatalf("dev key: %d %s", res.Status, res.Raw)
		}
	})

	t.Run("authentication", func(t *testing.T) {
		for _, key := range []string{"", "sk_test_unknown", keyA + "x"} {
			res := call(t, "GET", base, key, nil)
			if res.Status != 401 || res.Body["error"].(map[string]any)["type"] != "authentication_error" {
				t.Fatalf("key %q: %d %s", key, res.Status, res.Raw)
			}
			if !strings.HasPrefix(res.Header.Get("Request-Id"), "req_") {
				t.Fatalf("401 without Request-Id")
			}
		}
	})

	var id string
	t.Run("create, retrieve, update, list, delete", func(t *testing.T) {
		res := call(t, "POST", base, keyA, map[string]any{
			"url": "https://example.com/hooks", "enabled_events": []string{"*"},
			"description": "primary", "metadata": map[string]string{"team": "payments"},
		})
		if res.Status != 200 {
			t.Fatalf("create: %d %s", res.Status, res.Raw)
		}
		id, _ = res.Body["id"].(string)
		secret, _ := res.Body["secret"].(string)
		if !strings.HasPrefix(id, "we_") || !strings.HasPrefix(secret, "whsec_") || res.Body["status"] != "enabled" ||
			res.Body["object"] != "webhook_endpoint" || res.Body["livemode"] != false {
			t.Fatalf("create response: %s", res.Raw)
		}
		reqID := res.Header.Get("Request-Id")
		if !strings.HasPrefix(reqID, "req_") {
			t.Fatalf("Request-Id %q", reqID)
		}

		res = call(t, "GET", base+"/"+id, keyA, nil)
		if res.Status != 200 || res.Body["id"] != id || res.Body["secret"] != nil || res.Body["url"] != "https://example.com/hooks" {
			t.Fatalf("retrieve: %d %s", res.Status, res.Raw)
		}

		res = call(t, "POST", base+"/"+id, keyA, map[string]any{"status": "disabled", "enabled_events": []string{"payment_request.failed"}})
		if res.Status != 200 || res.Body["status"] != "disabled" || res.Body["secret"] != nil {
			t.Fatalf("update: %d %s", res.Status, res.Raw)
		}
		if ev := res.Body["enabled_events"].([]any); len(ev) != 1 || ev[0] != "payment_request.failed" {
			t.Fatalf("update enabled_events: %s", res.Raw)
		}

		res = call(t, "POST", base+"/"+id, keyA, map[string]any{"url": "http://example.com/hooks"})
		if res.Status != 400 || res.errCode() != "url_not_https" || res.errParam() != "url" {
			t.Fatalf("http url: %d %s", res.Status, res.Raw)
		}
		res = call(t, "POST", base, keyA, map[string]any{"url": "https://example.com", "enabled_events": []string{"*"}, "colour": "red"})
		if res.Status != 400 || res.errCode() != "parameter_unknown" || res.errParam() != "colour" {
			t.Fatalf("unknown param: %d %s", res.Status, res.Raw)
		}
		// Input that would be stored other than sent, or read two ways, is refused by name.
		for _, tc := range []struct{ body, code, param string }{
			{`{"url":"https://user:pass@example.com/hooks","enabled_events":["*"]}`, "url_credentials_not_allowed", "url"},
			{`{"url":"https://example.com/a","enabled_events":["*"],"url":"https://example.com/b"}`, "parameter_duplicate", "url"},
			{`{"url":"https://example.com/a","enabled_events":["*"],"metadata":{"k":"1","k":"2"}}`, "parameter_duplicate", "metadata[k]"},
			{"{\"url\":\"https://example.com/\xff\",\"enabled_events\":[\"*\"]}", "parameter_invalid", "url"},
		} {
			res := callRaw(t, "POST", base, keyA, tc.body, nil)
			if res.Status != 400 || res.errCode() != tc.code || res.errParam() != tc.param {
				t.Fatalf("%q: %d %s", tc.body, res.Status, res.Raw)
			}
		}

		res = call(t, "DELETE", base+"/"+id, keyA, nil)
		if res.Status != 200 || res.Body["deleted"] != true || res.Body["id"] != id || res.Body["object"] != "webhook_endpoint" {
			t.Fatalf("delete: %d %s", res.Status, res.Raw)
		}
		res = call(t, "GET", base+"/"+id, keyA, nil)
		if res.Status != 404 || res.errCode() != "resource_missing" {
			t.Fatalf("after delete: %d %s", res.Status, res.Raw)
		}
	})

	t.Run("pagination forwards and backwards", func(t *testing.T) {
		key := p.newKey(t, "acct_pages", false)
		var created []string
		for i := 0; i < 25; i++ {
			res := call(t, "POST", base, key, map[string]any{"url": fmt.Sprintf("https://example.com/%d", i), "enabled_events": []string{"*"}})
			if res.Status != 200 {
				t.Fatalf("create %d: %d %s", i, res.Status, res.Raw)
			}
			created = append(created, res.Body["id"].(string))
		}
		newestFirst := make([]string, len(created))
		for i, id := range created {
			newestFirst[len(created)-1-i] = id
		}

		page := func(query string) ([]string, bool) {
			res := call(t, "GET", base+"?"+query, key, nil)
			if res.Status != 200 || res.Body["object"] != "list" || res.Body["url"] != "/v1/webhook_endpoints" {
				t.Fatalf("list %s: %d %s", query, res.Status, res.Raw)
			}
			var ids []string
			for _, o := range res.Body["data"].([]any) {
				ids = append(ids, o.(map[string]any)["id"].(string))
			}
			return ids, res.Body["has_more"].(bool)
		}

		var forward []string
		var hasMores []bool
		query := "limit=10"
		for {
			ids, more := page(query)
			forward = append(forward, ids...)
			hasMores = append(hasMores, more)
			if !more {
				break
			}
			query = "limit=10&starting_after=" + ids[len(ids)-1]
		}
		if strings.Join(forward, ",") != strings.Join(newestFirst, ",") {
			t.Fatalf("forward pages:\n got %v\nwant %v", forward, newestFirst)
		}
		if fmt.Sprint(hasMores) != "[true true false]" {
			t.Fatalf("forward has_more %v", hasMores)
		}

		// Back from the oldest object: each page ends just before the previous one's first.
		var backward []string
		hasMores = nil
		query = "limit=10&ending_before=" + newestFirst[len(newestFirst)-1]
		for {
			ids, more := page(query)
			backward = append(ids, backward...)
			hasMores = append(hasMores, more)
			if !more {
				break
			}
			query = "limit=10&ending_before=" + ids[0]
		}
		if strings.Join(backward, ",") != strings.Join(newestFirst[:24], ",") {
			t.Fatalf("backward pages:\n got %v\nwant %v", backward, newestFirst[:24])
		}
		if fmt.Sprint(hasMores) != "[true true false]" {
			t.Fatalf("backward has_more %v", hasMores)
		}

		for _, bad := range []struct{ query, code string }{
			{"limit=0", "parameter_invalid"}, {"limit=101", "parameter_invalid"}, {"limit=", "parameter_invalid"},
			{"limit=1&limit=2", "parameter_duplicate"}, {"limit=10&limit=10", "parameter_duplicate"},
		} {
			res := call(t, "GET", base+"?"+bad.query, key, nil)
			if res.Status != 400 || res.errParam() != "limit" || res.errCode() != bad.code {
				t.Fatalf("%s: %d %s", bad.query, res.Status, res.Raw)
			}
		}
	})

	t.Run("isolation by account and mode", func(t *testing.T) {
		res := call(t, "POST", base, keyA, map[string]any{"url": "https://example.com/a", "enabled_events": []string{"*"}})
		if res.Status != 200 {
			t.Fatalf("create: %d %s", res.Status, res.Raw)
		}
		own := res.Body["id"].(string)
		for name, key := range map[string]string{"account B": keyB, "live key of A": keyALive} {
			for _, method := range []string{"GET", "POST", "DELETE"} {
				var body any
				if method == "POST" {
					body = map[string]any{"description": "hijack"}
				}
				res := call(t, method, base+"/"+own, key, body)
				if res.Status != 404 || res.errCode() != "resource_missing" {
					t.Fatalf("%s %s: %d %s", name, method, res.Status, res.Raw)
				}
			}
			res := call(t, "GET", base+"?limit=100", key, nil)
			if strings.Contains(string(res.Raw), own) {
				t.Fatalf("%s lists A's endpoint", name)
			}
		}
		res = call(t, "GET", base+"/"+own, keyA, nil)
		if res.Status != 200 || res.Body["description"] == "hijack" {
			t.Fatalf("A's endpoint changed: %s", res.Raw)
		}
		if res.Body["livemode"] != false {
			t.Fatalf("livemode %v", res.Body["livemode"])
		}
	})

	t.Run("unknown route and method", func(t *testing.T) {
		res := call(t, "GET", p.GatewayURL+"/v1/nothing_here", keyA, nil)
		if res.Status != 404 || res.errCode() == "" {
			t.Fatalf("unknown route: %d %s", res.Status, res.Raw)
		}
		res = call(t, http.MethodPut, base, keyA, nil)
		if res.Status != 405 {
			t.Fatalf("PUT: %d %s", res.Status, res.Raw)
		}
	})
}
