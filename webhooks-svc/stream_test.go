package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// sseMessage is one Server-Sent Events message, or a comment (event "comment").
type sseMessage struct {
	event, id, data string
}

// openStream opens GET /v1/events/stream for c, resuming after lastID when not empty, and
// returns the response and a channel of its messages (closed at the end of the stream).
func (c *client) openStream(lastID string) (*http.Response, <-chan sseMessage) {
	c.t.Helper()
	req, err := http.NewRequest("GET", c.svc.url+"/v1/events/stream", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	c.svc.signer.Sign(req.Header.Set, identity.Identity{Account: c.account, Livemode: c.livemode,
		RequestID: c.svc.ids.New(ids.Request)}, "GET", req.URL.Path)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { res.Body.Close() })
	out := make(chan sseMessage, 1000)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		var m sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m != (sseMessage{}) {
					if m.event == "" {
						m.event = "message"
					}
					out <- m
				}
				m = sseMessage{}
			case strings.HasPrefix(line, ":"):
				m.event = "comment"
			case strings.HasPrefix(line, "event: "):
				m.event = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				m.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				m.data = line[len("data: "):]
			}
		}
	}()
	return res, out
}

// next returns the next message that is not a comment, failing after a few seconds.
func next(t *testing.T, msgs <-chan sseMessage) sseMessage {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the stream ended")
			}
			if m.event != "comment" {
				return m
			}
		case <-timeout:
			t.Fatal("no message within 10s")
		}
	}
}

func TestEventStream(t *testing.T) {
	svc := start(t, "WEBHOOKS_STREAM_HEARTBEAT", "200ms", "WEBHOOKS_STREAM_MAX_DURATION", "2s")
	c := svc.client(t)
	other := svc.client(t)

	res, msgs := c.openStream("")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ready := next(t, msgs)
	var r struct {
		Object    string
		Position  string
		Resumed   bool
		Heartbeat int64 `json:"heartbeat_interval_ms"`
	}
	if err := json.Unmarshal([]byte(ready.data), &r); err != nil || ready.event != "ready" || r.Object != "event_stream" ||
		r.Position != ready.id || r.Resumed || r.Heartbeat != 200 {
		t.Fatalf("first message %+v (%v)", ready, err)
	}
	_, otherMsgs := other.openStream("")
	next(t, otherMsgs)

	// Three changes, three events, each once (in the order stored: endpoints apart may be
	// stored in another order than made).
	var created []string
	for i := range 3 {
		created = append(created, c.do("POST", "/v1/webhook_endpoints",
			fmt.Sprintf(`{"url":"https://ep%d.example.invalid/h","enabled_events":["*"]}`, i)).body["id"].(string))
	}
	var got []sseMessage
	for range 3 {
		m := next(t, msgs)
		var ev struct {
			ID, Type string
			Data     struct{ Object struct{ ID string } }
		}
		if err := json.Unmarshal([]byte(m.data), &ev); err != nil || m.event != "message" || m.id == "" ||
			ev.Type != "webhook_endpoint.created" {
			t.Fatalf("message %+v (%v)", m, err)
		}
		if !slices.Contains(created, ev.Data.Object.ID) {
			t.Fatalf("event %d is about %s, want one of %v", len(got), ev.Data.Object.ID, created)
		}
		created = slices.DeleteFunc(created, func(id string) bool { return id == ev.Data.Object.ID })
		got = append(got, m)
	}
	// Heartbeats while idle, then the end of the stream's length.
	var comments int
	for m := range msgs {
		switch m.event {
		case "comment":
			comments++
		case "reconnect":
		default:
			t.Fatalf("unexpected message %+v", m)
		}
	}
	if comments < 2 {
		t.Fatalf("%d heartbeats in an idle second", comments)
	}

	// Resumed after the first event: the two that followed, then nothing more.
	_, msgs = c.openStream(got[0].id)
	if m := next(t, msgs); m.event != "ready" || m.id != got[0].id || !strings.Contains(m.data, `"resumed":true`) {
		t.Fatalf("resumed stream's first message %+v", m)
	}
	for _, want := range got[1:] {
		if m := next(t, msgs); m.id != want.id || m.data != want.data {
			t.Fatalf("resumed: %+v, want %+v", m, want)
		}
	}

	// Another account saw none of it.
	select {
	case m := <-otherMsgs:
		if m.event != "comment" && m.event != "reconnect" {
			t.Fatalf("another account's stream got %+v", m)
		}
	case <-time.After(300 * time.Millisecond):
	}

	// A Last-Event-ID that is not one is refused by name.
	req, _ := http.NewRequest("GET", svc.url+"/v1/events/stream", nil)
	req.Header.Set("Last-Event-ID", "evt_123")
	svc.signer.Sign(req.Header.Set, identity.Identity{Account: c.account, RequestID: svc.ids.New(ids.Request)}, "GET", req.URL.Path)
	bad, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Body.Close()
	var e struct{ Error struct{ Param, Code string } }
	json.NewDecoder(bad.Body).Decode(&e)
	if bad.StatusCode != 400 || e.Error.Param != "Last-Event-ID" || e.Error.Code != "parameter_invalid" {
		t.Fatalf("bad Last-Event-ID: %d %+v", bad.StatusCode, e)
	}
}
