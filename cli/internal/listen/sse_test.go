package listen

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	in := "retry: 1000\nevent: ready\nid: 5-0\ndata: {\"a\":1}\n\n" +
		": heartbeat 1700000000\n\n" +
		"id: 6-0\ndata: line1\ndata: line2\n\n" +
		"event: reconnect\r\ndata: {}\r\n\r\n" +
		"id: 7-0\ndata: cut"
	r := newSSEReader(strings.NewReader(in))
	want := []message{
		{event: "ready", id: "5-0", data: `{"a":1}`, hasID: true},
		{event: "message", id: "6-0", data: "line1\nline2", hasID: true},
		{event: "reconnect", data: "{}"},
	}
	for i, w := range want {
		m, err := r.next()
		if err != nil || m != w {
			t.Fatalf("message %d: %+v (%v), want %+v", i, m, err, w)
		}
	}
	if _, err := r.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a message cut short: %v, want unexpected EOF", err)
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add("event: ready\nid: 1-0\ndata: {}\n\n: c\n\nid: 2-0\ndata: x\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := newSSEReader(strings.NewReader(in))
		for range len(in) + 1 {
			m, err := r.next()
			if err != nil {
				return
			}
			if m.event == "" || strings.Contains(m.id, "\n") {
				t.Fatalf("message %+v from %q", m, in)
			}
		}
		t.Fatalf("more messages than bytes in %q", in)
	})
}
