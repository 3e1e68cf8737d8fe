package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

type obj struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func TestNewAndRender(t *testing.T) {
	gen := ids.NewGenerator(nil)
	now := time.Unix(1_800_000_000, 0)
	o := &obj{ID: "we_1", Status: "disabled"}
	e, err := New(gen, now, Change{
		Type: "webhook_endpoint.updated", Account: "acct_a", Object: o,
		Previous: map[string]any{"status": "enabled"},
		Caller:   &identity.Identity{Account: "acct_a", RequestID: "req_1", IdempotencyKey: "k"},
	})
	if err != nil {
		t.Fatal(err)
	}
	o.Status = "changed later" // the event keeps the object as it was
	b, _ := json.Marshal(Render(e, "2026-11-01"))
	got := string(b)
	for _, want := range []string{`"object":"event"`, `"type":"webhook_endpoint.updated"`, `"created":1800000000`,
		`"data":{"object":{"id":"we_1","status":"disabled"},"previous_attributes":{"status":"enabled"}}`,
		`"request":{"id":"req_1","idempotency_key":"k"}`, `"livemode":false`, `"pending_webhooks":0`} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered %s\nmissing %s", got, want)
		}
	}
	if strings.Contains(got, "acct_a") {
		t.Errorf("rendered event shows the account: %s", got)
	}
}

func TestBackgroundEventHasNullRequest(t *testing.T) {
	e, err := New(ids.NewGenerator(nil), time.Now(), Change{Type: "x.y", Account: "acct_a", Object: obj{ID: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Render(e, "v"))
	if !strings.Contains(string(b), `"request":{"id":null,"idempotency_key":null}`) || strings.Contains(string(b), "previous_attributes") {
		t.Fatalf("got %s", b)
	}
}

// A destination routes the event; it is never part of what the API or a receiver sees.
func TestDestinationIsNeverRendered(t *testing.T) {
	e, err := New(ids.NewGenerator(nil), time.Now(), Change{Type: "x.y", Account: "acct_a", Object: obj{ID: "vs_1"},
		Destination: &Destination{URL: "https://hooks.example.com/x", Secret: "whsec_c2VjcmV0"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Render(e, "v"))
	if strings.Contains(string(b), "hooks.example.com") || strings.Contains(string(b), "whsec_") {
		t.Fatalf("rendered event shows its destination: %s", b)
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
