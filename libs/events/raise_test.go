package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// thing is an aggregate of the test: a status, a note, and lines (its parts).
type thing struct {
	account string
	status  string
	note    string
	lines   []string
	dest    *events.Destination
	events.Recorder
}

func (t *thing) Account() string                       { return t.account }
func (t *thing) Livemode() bool                        { return false }
func (t *thing) EventDestination() *events.Destination { return t.dest }

type thingJSON struct {
	Object string `json:"object"`
	Status string `json:"status"`
	Note   string `json:"note"`
	Lines  int    `json:"lines"`
}

func emitter(renders *int) *events.Emitter[*thing] {
	return &events.Emitter[*thing]{
		IDs: ids.NewGenerator(nil),
		Now: func() time.Time { return time.Unix(1_800_000_000, 0) },
		Object: func(t *thing) any {
			*renders++
			return thingJSON{Object: "thing", Status: t.status, Note: t.note, Lines: len(t.lines)}
		},
		Parts: map[string]func(*thing, any) any{
			"thing_line.created": func(_ *thing, p any) any { return map[string]string{"object": "thing_line", "text": p.(string)} },
		},
	}
}

func TestEmitterRendersEachChangeOnce(t *testing.T) {
	var renders int
	e := emitter(&renders)
	before := thing{account: "acct_1", status: "open", note: "n"}
	a := before
	a.status, a.lines = "closed", []string{"l1"}
	a.RaisePart("thing_line.created", "l1")
	a.RaiseUpdate("thing.updated")
	a.Raise("thing.closed")

	ctx, answer := events.WithAnswer(events.CausedBy(context.Background(), identity.Identity{RequestID: "req_1", IdempotencyKey: "k"}))
	evs, err := e.Events(ctx, &a, func() *thing { b := before; return &b })
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	// The aggregate is rendered once for its two events, and once more for its state before.
	if renders != 2 {
		t.Errorf("%d renderings of the aggregate, want 2", renders)
	}
	want := []struct{ typ, object, previous string }{
		{"thing_line.created", `{"object":"thing_line","text":"l1"}`, ``},
		{"thing.updated", `{"object":"thing","status":"closed","note":"n","lines":1}`, `{"lines":0,"status":"open"}`},
		{"thing.closed", `{"object":"thing","status":"closed","note":"n","lines":1}`, ``},
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Type != w.typ || string(ev.Data.Object) != w.object || string(ev.Data.PreviousAttributes) != w.previous {
			t.Errorf("event %d: %s %s previous %s; want %s %s previous %s", i, ev.Type, ev.Data.Object, ev.Data.PreviousAttributes, w.typ, w.object, w.previous)
		}
		if ev.Account != "acct_1" || ev.APIVersion != events.APIVersion || ev.Created != 1_800_000_000 || ev.Object != "event" {
			t.Errorf("event %d envelope: %+v", i, ev)
		}
		if ev.Request.ID == nil || *ev.Request.ID != "req_1" || ev.Request.IdempotencyKey == nil || *ev.Request.IdempotencyKey != "k" {
			t.Errorf("event %d request: %+v", i, ev.Request)
		}
		if i > 0 && ev.ID == evs[i-1].ID {
			t.Errorf("event %d repeats the id %s", i, ev.ID)
		}
	}
	// The answer is the events' rendering, for that very aggregate only.
	if b, ok := answer.For(&a); !ok || string(b) != want[1].object {
		t.Errorf("answer %s %v", b, ok)
	}
	other := a
	if _, ok := answer.For(&other); ok {
		t.Error("an answer for another aggregate")
	}
}

func TestEmitterBackgroundAndRouted(t *testing.T) {
	var renders int
	e := emitter(&renders)
	a := &thing{account: "acct_1", status: "open", dest: &events.Destination{URL: "https://example.com/h", Secret: "whsec_x"}}
	a.RaiseUpdate("thing.updated") // nothing changed: no previous_attributes
	evs, err := e.Events(context.Background(), a, func() *thing { return &thing{account: "acct_1", status: "open"} })
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(events.Render(evs[0], events.APIVersion))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if string(got["request"]) != `{"id":null,"idempotency_key":null}` {
		t.Errorf("background request: %s", got["request"])
	}
	if string(got["data"]) != `{"object":{"object":"thing","status":"open","note":"","lines":0}}` {
		t.Errorf("data of an update that changed nothing: %s", got["data"])
	}
	if d := evs[0].Destination; d == nil || *d != *a.dest || d == a.dest {
		t.Errorf("destination %+v: want a copy of the aggregate's", d)
	}
	// Nothing raised: nothing rendered.
	renders = 0
	if evs, err := e.Events(context.Background(), &thing{}, nil); err != nil || evs != nil || renders != 0 {
		t.Errorf("no events raised: %v %v, %d renderings", evs, err, renders)
	}
}
