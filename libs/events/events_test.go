package events

import (
	"encoding/json"
	"strings"
	"testing"
)

// Render shows the envelope as clients see it: never the account nor the destination, which
// route the event.
func TestRender(t *testing.T) {
	req, key := "req_1", "k"
	e := Event{ID: "evt_1", Object: "event", Type: "webhook_endpoint.updated", Account: "acct_a", Created: 1_800_000_000,
		Request:     Request{ID: &req, IdempotencyKey: &key},
		Data:        Data{Object: json.RawMessage(`{"id":"we_1","status":"disabled"}`), PreviousAttributes: json.RawMessage(`{"status":"enabled"}`)},
		Destination: &Destination{URL: "https://hooks.example.com/x", Secret: "whsec_c2VjcmV0"}}
	b, _ := json.Marshal(Render(e, "2026-11-01"))
	got := string(b)
	for _, want := range []string{`"object":"event"`, `"type":"webhook_endpoint.updated"`, `"created":1800000000`,
		`"api_version":"2026-11-01"`,
		`"data":{"object":{"id":"we_1","status":"disabled"},"previous_attributes":{"status":"enabled"}}`,
		`"request":{"id":"req_1","idempotency_key":"k"}`, `"livemode":false`, `"pending_webhooks":0`} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered %s\nmissing %s", got, want)
		}
	}
	for _, hidden := range []string{"acct_a", "hooks.example.com", "whsec_"} {
		if strings.Contains(got, hidden) {
			t.Errorf("rendered event shows %s: %s", hidden, got)
		}
	}
}

// An update's previous_attributes: the top-level fields whose rendering changed, with their
// old values; none when nothing the API shows changed.
func TestChanged(t *testing.T) {
	before, err := FieldsOf(map[string]any{"status": "enabled", "url": "https://a", "metadata": map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := FieldsOf(map[string]any{"status": "disabled", "url": "https://a", "metadata": map[string]string{"k": "w"}})
	got, _ := json.Marshal(Changed(before, after))
	if string(got) != `{"metadata":{"k":"v"},"status":"enabled"}` {
		t.Fatalf("Changed = %s", got)
	}
	if Changed(before, before) != nil {
		t.Fatal("Changed of an unchanged object is not nil")
	}
	if _, err := FieldsOf([]int{1}); err == nil {
		t.Fatal("FieldsOf of a non-object")
	}
}
