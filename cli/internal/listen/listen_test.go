package listen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/libs/stdwebhooks"
)

// feedServer serves a fixed list of events as the event stream does, with each connection's
// behaviour scripted: how many events it sends before it is cut, or goes silent.
type feedServer struct {
	mu      sync.Mutex
	events  []string // data of event i has id evt_i, position "i-0" (1-based)
	conns   []string // Last-Event-ID of each connection
	cutAt   []int    // connection n sends at most cutAt[n] events, then is cut (-1: all)
	silent  int      // this connection (0-based) sends the ready message, then nothing
	dupEach bool     // send every event twice, at two positions (as after a republish)
}

func (f *feedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer sk_test_good" {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"type":"authentication_error","code":"api_key_invalid","message":"Invalid API key provided."}}`)
		return
	}
	f.mu.Lock()
	n := len(f.conns)
	last := r.Header.Get("Last-Event-ID")
	f.conns = append(f.conns, last)
	limit := -1
	if n < len(f.cutAt) {
		limit = f.cutAt[n]
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	from := 0
	if last != "" {
		from, _ = strconv.Atoi(strings.TrimSuffix(last, "-0"))
	}
	pos := strconv.Itoa(from) + "-0"
	fmt.Fprintf(w, "event: ready\nid: %s\ndata: {\"heartbeat_interval_ms\":50,\"livemode\":false}\n\n", pos)
	fl.Flush()
	if n == f.silent {
		<-r.Context().Done() // connected, and nothing: the client must notice
		return
	}
	sent := 0
	for i := from; i < len(f.events); i++ {
		if limit >= 0 && sent == limit {
			panic(http.ErrAbortHandler) // cut mid-stream
		}
		fmt.Fprintf(w, "id: %d-0\ndata: %s\n\n", i+1, f.events[i])
		if f.dupEach {
			fmt.Fprintf(w, ": republished\n\ndata: %s\n\n", f.events[i])
		}
		fl.Flush()
		sent++
	}
	io.WriteString(w, "event: reconnect\ndata: {}\n\n")
}

type forwarded struct {
	mu   sync.Mutex
	ids  []string
	bad  int
	done chan struct{}
	want int
}

func (f *forwarded) handler(secret string) http.HandlerFunc {
	key, _ := stdwebhooks.DecodeSecret(secret)
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		id := r.Header.Get("webhook-id")
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("webhook-signature") != stdwebhooks.Sign([][]byte{key}, id, ts, body) ||
			!strings.Contains(string(body), `"id":"`+id+`"`) {
			f.bad++
		}
		f.ids = append(f.ids, id)
		if len(f.ids) == f.want {
			close(f.done)
		}
	}
}

func TestListenResumesAfterCutsAndSilenceWithoutGapsOrDoubles(t *testing.T) {
	const n = 200
	feed := &feedServer{silent: 3, cutAt: []int{0, 30, 1, -1, 50, 0, 70}, dupEach: true}
	for i := range n {
		typ := "payment_request.succeeded"
		if i%2 == 1 {
			typ = "collection_case.created"
		}
		feed.events = append(feed.events, fmt.Sprintf(`{"id":"evt_%d","object":"event","type":%q}`, i+1, typ))
	}
	api := httptest.NewServer(feed)
	defer api.Close()
	fw := &forwarded{done: make(chan struct{}), want: n / 2}
	local := httptest.NewServer(fw.handler(Secret("sk_test_good")))
	defer local.Close()

	var out, log bytes.Buffer
	l := New(Config{Base: api.URL, Key: "sk_test_good", Agent: "test", ForwardTo: local.URL,
		Types: []string{"payment_request.*"}, Out: &out, Log: &log,
		Stream: &http.Client{}, Forward: &http.Client{}, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- l.Run(ctx) }()
	select {
	case <-fw.done:
	case <-time.After(20 * time.Second):
		cancel()
		<-errc // Run has stopped writing to log
		fw.mu.Lock()
		defer fw.mu.Unlock()
		t.Fatalf("forwarded %d of %d; log:\n%s", len(fw.ids), n/2, log.String())
	}
	time.Sleep(50 * time.Millisecond) // anything more would be a double
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	for i, id := range fw.ids {
		if want := fmt.Sprintf("evt_%d", 2*i+1); id != want {
			t.Fatalf("forward %d was %s, want %s (in order, once each)", i, id, want)
		}
	}
	if len(fw.ids) != n/2 || fw.bad != 0 {
		t.Fatalf("%d forwarded, %d badly signed", len(fw.ids), fw.bad)
	}
	s := l.Stats()
	if s.Events != n || s.Skipped != n/2 || s.Duplicates != n || s.Connections < 7 {
		t.Fatalf("stats %+v", s)
	}
	// Every reconnection resumed from the last event seen. (A connection the cancel cut short
	// may still be in the feed's handler: its conns are read under its lock.)
	feed.mu.Lock()
	conns := slices.Clone(feed.conns)
	feed.mu.Unlock()
	if len(conns) < 5 || conns[0] != "" || conns[1] != "0-0" || conns[2] != "30-0" || conns[4] != "31-0" {
		t.Fatalf("resumed from %v", conns)
	}
	if !strings.Contains(log.String(), "no event and no heartbeat") {
		t.Fatalf("the silent stream was not reported:\n%s", log.String())
	}
	if got := out.String(); !strings.Contains(got, "--> payment_request.succeeded [evt_1]") ||
		!strings.Contains(got, "<-- [200] POST "+local.URL) || strings.Contains(got, "collection_case") || strings.Contains(got, "\x1b[") {
		t.Fatalf("output:\n%.600s", got)
	}
}

func TestListenStopsOnARefusedKey(t *testing.T) {
	api := httptest.NewServer(&feedServer{})
	defer api.Close()
	var log bytes.Buffer
	l := New(Config{Base: api.URL, Key: "sk_test_bad", Out: io.Discard, Log: &log, Stream: &http.Client{}, Forward: &http.Client{}})
	err := l.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "api_key_invalid") {
		t.Fatalf("Run: %v", err)
	}
}

func TestSecretIsStablePerKey(t *testing.T) {
	a, b := Secret("sk_test_1"), Secret("sk_test_2")
	if a != Secret("sk_test_1") || a == b || !strings.HasPrefix(a, "whsec_") || strings.Contains(a, "sk_test") {
		t.Fatalf("secrets %q %q", a, b)
	}
	if _, err := stdwebhooks.DecodeSecret(a); err != nil {
		t.Fatal(err)
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		types []string
		t     string
		want  bool
	}{
		{nil, "a.b", true},
		{[]string{"a.b"}, "a.b", true},
		{[]string{"a.b"}, "a.c", false},
		{[]string{"a.*"}, "a.c", true},
		{[]string{"a.*"}, "ab.c", false},
		{[]string{"*"}, "x.y", true},
		{[]string{"x.y", "a.*"}, "x.y", true},
	} {
		if got := Matches(c.types, c.t); got != c.want {
			t.Errorf("Matches(%v, %q) = %v", c.types, c.t, got)
		}
	}
}
