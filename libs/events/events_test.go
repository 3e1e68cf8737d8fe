package events

import (
	"encoding/json"
	"strconv"
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

func TestPayloadRoundTrip(t *testing.T) {
	e, _ := New(ids.NewGenerator(nil), time.Now(), Change{Type: "x.y", Account: "acct_a", Livemode: true, Object: obj{ID: "a"}})
	b, err := Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil || got.ID != e.ID || got.Account != "acct_a" || !got.Livemode || string(got.Data.Object) != `{"id":"a","status":""}` {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{`{`, `{}`, `{"id":"evt_x","type":"a.b","account":"acct_a","data":{"object":{}}}`} {
		if _, err := Unmarshal([]byte(bad)); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestBatchRoundTrip(t *testing.T) {
	g := ids.NewGenerator(nil)
	var evs []Event
	for i := range 3 {
		e, _ := New(g, time.Now(), Change{Type: "x.y", Account: "acct_a", Object: obj{ID: strconv.Itoa(i)}})
		evs = append(evs, e)
	}
	b, err := MarshalBatch(evs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalBatch(b)
	if err != nil || len(got) != 3 {
		t.Fatalf("round trip: %d events, %v", len(got), err)
	}
	for i := range got {
		if got[i].ID != evs[i].ID || string(got[i].Data.Object) != string(evs[i].Data.Object) {
			t.Errorf("event %d: %+v, want %+v", i, got[i], evs[i])
		}
	}
	if _, err := MarshalBatch(nil); err == nil {
		t.Error("MarshalBatch accepted no events")
	}
	if _, err := MarshalBatch(make([]Event, MaxBatch+1)); err == nil {
		t.Error("MarshalBatch accepted more than MaxBatch events")
	}
	if got, err := FromTask(BatchTaskType, b); err != nil || len(got) != 3 {
		t.Errorf("FromTask(batch): %d events, %v", len(got), err)
	}
	one, _ := Marshal(evs[0])
	if got, err := FromTask(TaskType, one); err != nil || len(got) != 1 || got[0].ID != evs[0].ID {
		t.Errorf("FromTask(event): %v, %v", got, err)
	}
	if _, err := FromTask("webhook:deliver", one); err == nil {
		t.Error("FromTask accepted another task type")
	}
	for _, bad := range []string{`{`, `{}`, `{"events":[]}`, `{"events":[` + string(one) + `,{"id":"evt_x"}]}`, string(one)} {
		if _, err := UnmarshalBatch([]byte(bad)); err == nil {
			t.Errorf("UnmarshalBatch(%.60s…) accepted", bad)
		}
	}
}

// A destination routes the event; it is never part of what the API or a receiver sees, and a
// payload with half a destination is refused rather than delivered unsigned or nowhere.
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
	payload, _ := Marshal(e)
	for _, half := range []string{`"secret":"whsec_c2VjcmV0"`, `"url":"https://hooks.example.com/x"`} {
		bad := strings.Replace(string(payload), half, strings.Split(half, ":")[0]+`:""`, 1)
		if _, err := Unmarshal([]byte(bad)); err == nil {
			t.Errorf("Unmarshal accepted a destination without %s: %s", half, bad)
		}
	}
}
