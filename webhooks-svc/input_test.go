package main

import (
	"testing"
)

// TestAmbiguousInputIsRefused: what a reader could take two ways, or that would be stored
// other than sent, is refused by name and changes nothing: a URL with credentials (stored and
// shown in every read), a JSON key given twice (encoding/json lets the last win), text that
// is not UTF-8 (stored as U+FFFD), a repeated or empty list parameter.
func TestAmbiguousInputIsRefused(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)

	for _, tc := range []struct {
		name, body, code, param string
	}{
		{"url with user and password", `{"url":"https://user:pass@example.invalid/h","enabled_events":["*"]}`, "url_credentials_not_allowed", "url"},
		{"url with user", `{"url":"https://user@example.invalid/h","enabled_events":["*"]}`, "url_credentials_not_allowed", "url"},
		{"url with empty userinfo", `{"url":"https://@example.invalid/h","enabled_events":["*"]}`, "url_credentials_not_allowed", "url"},
		{"url twice", `{"url":"https://a.example.invalid/h","enabled_events":["*"],"url":"https://b.example.invalid/h"}`, "parameter_duplicate", "url"},
		{"url twice, once escaped", `{"url":"https://a.example.invalid/h","enabled_events":["*"],"\u0075rl":"https://a.example.invalid/h"}`, "parameter_duplicate", "url"},
		{"metadata key twice", `{"url":"https://example.invalid/h","enabled_events":["*"],"metadata":{"plan":"a","plan":"b"}}`, "parameter_duplicate", "metadata[plan]"},
		{"url not UTF-8", "{\"url\":\"https://example.invalid/\xff\",\"enabled_events\":[\"*\"]}", "parameter_invalid", "url"},
		{"url with half a surrogate", `{"url":"https://example.invalid/\ud800","enabled_events":["*"]}`, "parameter_invalid", "url"},
		{"description not UTF-8", "{\"url\":\"https://example.invalid/h\",\"enabled_events\":[\"*\"],\"description\":\"caf\xe9\"}", "parameter_invalid", "description"},
		{"metadata value not UTF-8", "{\"url\":\"https://example.invalid/h\",\"enabled_events\":[\"*\"],\"metadata\":{\"k\":\"\xc3\"}}", "parameter_invalid", "metadata[k]"},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			c.with(t).do("POST", "/v1/webhook_endpoints", tc.body).wantError(t, 400, "invalid_request_error", tc.code, tc.param)
		})
	}
	if r := c.do("GET", "/v1/webhook_endpoints", "").wantOK(t); len(r.body["data"].([]any)) != 0 {
		t.Fatalf("a refused create stored something: %s", r.raw)
	}

	created := c.create(`{"url":"https://example.invalid/h","enabled_events":["*"]}`)
	id := created.str("id")
	for _, tc := range []struct {
		name, body, code, param string
	}{
		{"url with credentials", `{"url":"https://user:pass@example.invalid/h"}`, "url_credentials_not_allowed", "url"},
		{"status twice", `{"status":"disabled","status":"enabled"}`, "parameter_duplicate", "status"},
		{"url not UTF-8", "{\"url\":\"https://example.invalid/\xfe\"}", "parameter_invalid", "url"},
	} {
		t.Run("update "+tc.name, func(t *testing.T) {
			c.with(t).do("POST", "/v1/webhook_endpoints/"+id, tc.body).wantError(t, 400, "invalid_request_error", tc.code, tc.param)
		})
	}
	delete(created.body, "secret")
	assertBody(t, c.do("GET", "/v1/webhook_endpoints/"+id, "").wantOK(t), created.body)

	for _, tc := range []struct{ path, code, param string }{
		{"/v1/webhook_endpoints?limit=", "parameter_invalid", "limit"},
		{"/v1/webhook_endpoints?limit=1&limit=2", "parameter_duplicate", "limit"},
		{"/v1/webhook_endpoints?limit=3&limit=3", "parameter_duplicate", "limit"},
		{"/v1/webhook_endpoints?starting_after=&limit=3", "parameter_invalid", "starting_after"},
		{"/v1/webhook_endpoints?ending_before=" + id + "&ending_before=" + id, "parameter_duplicate", "ending_before"},
		{"/v1/events?created[gte]=1&created[gte]=2", "parameter_duplicate", "created[gte]"},
		{"/v1/events?created%5Blte%5D=1&created[lte]=2", "parameter_duplicate", "created[lte]"},
		{"/v1/events?created[gte]=", "parameter_invalid", "created[gte]"},
		{"/v1/events?type=webhook_endpoint.created&type=webhook_endpoint.updated", "parameter_duplicate", "type"},
		{"/v1/events?type=", "parameter_invalid", "type"},
		{"/v1/events?delivery_success=true&delivery_success=false", "parameter_duplicate", "delivery_success"},
		{"/v1/events?types[0]=webhook_endpoint.created&types[0]=webhook_endpoint.updated", "parameter_duplicate", "types[0]"},
		{"/v1/events?type=webhook_endpoint.%FF", "parameter_invalid", "type"},
		{"/v1/webhook_endpoints/" + id + "/deliveries?limit=1&limit=1", "parameter_duplicate", "limit"},
	} {
		t.Run("list "+tc.path, func(t *testing.T) {
			c.with(t).do("GET", tc.path, "").wantError(t, 400, "invalid_request_error", tc.code, tc.param)
		})
	}
	// Arrays repeat by design.
	c.do("GET", "/v1/events?types[]=webhook_endpoint.created&types[]=webhook_endpoint.updated", "").wantOK(t)
}
