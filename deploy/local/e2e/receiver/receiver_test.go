package receiver

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func post(t *testing.T, c *http.Client, url, id, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if id != "" {
		req.Header.Set(HeaderID, id)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestRecordsAndAnswers200ByDefault(t *testing.T) {
	r := New(t)
	if !strings.HasPrefix(r.URL(), "https://127.0.0.1:") || !strings.HasPrefix(r.Addr(), "127.0.0.1:") {
		t.Fatalf("URL %s Addr %s", r.URL(), r.Addr())
	}
	body := `{"id":"evt_1","object":"event","type":"webhook_endpoint.created","livemode":false,"data":{"object":{"id":"we_1"}}}`
	resp, _ := post(t, r.Client(), r.URL()+"/hooks", "evt_1", body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	reqs := r.WaitForAnswered(t, "/hooks", 1, time.Second)
	q := reqs[0]
	if q.Seq != 1 || q.Method != "POST" || q.Path != "/hooks" || string(q.Body) != body || q.ID() != "evt_1" ||
		q.Header.Get("Content-Type") != "application/json" || q.Status != 200 || !q.Done || q.Aborted || !q.Succeeded() {
		t.Fatalf("recorded %+v", q)
	}
	e := q.Event()
	if e.ID != "evt_1" || e.Type != "webhook_endpoint.created" || e.ObjectID() != "we_1" || e.Object != "event" {
		t.Fatalf("event %+v", e)
	}
	if r.Count("/hooks") != 1 || r.Count("/other") != 0 || r.Count("") != 1 || len(r.Requests("")) != 1 {
		t.Fatal("counts")
	}
	// Copies: changing what a test got does not change the record.
	q.Header.Set(HeaderID, "changed")
	if r.Requests("/hooks")[0].ID() != "evt_1" {
		t.Fatal("Requests returned the receiver's own header map")
	}
}

func TestSharedScriptFailsThenSucceeds(t *testing.T) {
	r := New(t)
	r.Script("/flaky", Fail(3, 500), OK())
	var got []int
	for i := 0; i < 5; i++ {
		resp, _ := post(t, r.Client(), r.URL()+"/flaky", "evt_"+strconv.Itoa(i%2), "{}")
		got = append(got, resp.StatusCode)
	}
	if want := []int{500, 500, 500, 200, 200}; !equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	reqs := r.Requests("/flaky")
	if len(reqs) != 5 || reqs[0].Status != 500 || reqs[3].Status != 200 {
		t.Fatalf("recorded %s", Summary(reqs))
	}
}

func TestScriptPerEvent(t *testing.T) {
	r := New(t)
	r.ScriptPerEvent("/flaky", Fail(2, 503), OK())
	var got []string
	for _, id := range []string{"a", "b", "a", "b", "a", "c"} {
		resp, _ := post(t, r.Client(), r.URL()+"/flaky", id, "{}")
		got = append(got, id+strconv.Itoa(resp.StatusCode))
	}
	want := "a503 b503 a503 b503 a200 c503"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestAfterTheLastStepAnswers200(t *testing.T) {
	r := New(t)
	r.Script("/x", Fail(1, 500))
	a, _ := post(t, r.Client(), r.URL()+"/x", "", "{}")
	b, _ := post(t, r.Client(), r.URL()+"/x", "", "{}")
	if a.StatusCode != 500 || b.StatusCode != 200 {
		t.Fatalf("%d %d", a.StatusCode, b.StatusCode)
	}
}

func TestGoneRetryAfterRedirect(t *testing.T) {
	r := New(t)
	r.Script("/gone", Gone())
	r.Script("/busy", RetryAfter(1, 429, "2"), RetryAfter(1, 503, "3"))
	r.Script("/moved", Redirect("https://127.0.0.1:1/private"))
	r.Script("/teapot", Status(418))
	c := r.Client()
	for i := 0; i < 2; i++ {
		if resp, _ := post(t, c, r.URL()+"/gone", "", "{}"); resp.StatusCode != 410 {
			t.Fatalf("gone: %d", resp.StatusCode)
		}
	}
	resp, _ := post(t, c, r.URL()+"/busy", "", "{}")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("busy 1: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, _ = post(t, c, r.URL()+"/busy", "", "{}")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("busy 2: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, _ = post(t, c, r.URL()+"/busy", "", "{}")
	if resp.StatusCode != 200 || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("busy 3: %d", resp.StatusCode)
	}
	resp, _ = post(t, c, r.URL()+"/moved", "", "{}")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://127.0.0.1:1/private" {
		t.Fatalf("moved: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := post(t, c, r.URL()+"/teapot", "", "{}"); resp.StatusCode != 418 || body == "" {
		t.Fatalf("teapot: %d %q", resp.StatusCode, body)
	}
}

func TestSleepAndAbort(t *testing.T) {
	r := New(t)
	r.Script("/slow", Sleep(300*time.Millisecond))
	start := time.Now()
	resp, _ := post(t, r.Client(), r.URL()+"/slow", "", "{}")
	if resp.StatusCode != 200 || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("sleep: %d after %s", resp.StatusCode, time.Since(start))
	}

	// A client that gives up mid-sleep leaves an aborted record, not an answered one.
	r.Script("/slower", Sleep(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL()+"/slower", strings.NewReader("{}"))
	if resp, err := r.Client().Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("expected the client to time out; got %d %q %v after %s; recorded %+v", resp.StatusCode, b, resp.Header, time.Since(start), r.Requests("/slower"))
	}
	reqs := r.WaitUntil(t, "/slower", 5*time.Second, "an aborted request", func(reqs []Request) bool {
		return len(reqs) == 1 && reqs[0].Done
	})
	if !reqs[0].Aborted || reqs[0].Status != 0 || reqs[0].Succeeded() {
		t.Fatalf("recorded %+v", reqs[0])
	}
}

func TestHoldUntilReleased(t *testing.T) {
	r := New(t)
	release := make(chan struct{})
	r.Script("/held", Hold(release))
	var wg sync.WaitGroup
	statuses := make(chan int, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, r.URL()+"/held", strings.NewReader("{}"))
			resp, err := r.Client().Do(req)
			if err != nil {
				statuses <- -1
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	reqs := r.WaitFor(t, "/held", 3, 5*time.Second)
	for _, q := range reqs {
		if q.Done {
			t.Fatalf("answered before release: %+v", q)
		}
	}
	close(release)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Fatalf("status %d", s)
		}
	}
	r.WaitForAnswered(t, "/held", 3, 5*time.Second)
}

func TestCloseReleasesHeldRequests(t *testing.T) {
	r := Start()
	r.Script("/held", Hold(make(chan struct{})))
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, r.URL()+"/held", strings.NewReader("{}"))
		resp, err := r.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, ok := r.Await("/held", 5*time.Second, func(q []Request) bool { return len(q) == 1 }); !ok {
		t.Fatal("request did not arrive")
	}
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a held request")
	}
	<-errc
	r.Close() // idempotent
	if q := r.Requests("/held"); len(q) != 1 || !q[0].Aborted {
		t.Fatalf("after Close: %+v", q)
	}
}

func TestAwaitTimesOut(t *testing.T) {
	r := New(t)
	start := time.Now()
	reqs, ok := r.Await("/never", 100*time.Millisecond, func(q []Request) bool { return len(q) > 0 })
	if ok || len(reqs) != 0 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("Await: %v %v after %s", reqs, ok, time.Since(start))
	}
}

func TestVerifiesWhatAStandardWebhooksSenderSends(t *testing.T) {
	// End to end inside the package: sign as a sender would, send over TLS, verify what was
	// recorded with the raw body.
	r := New(t)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := `{"id":"evt_1","type":"x"}`
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig, err := Sign(secret, "evt_1", ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, r.URL()+"/signed", strings.NewReader(body))
	req.Header.Set(HeaderID, "evt_1")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	resp, err := r.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	q := r.WaitFor(t, "/signed", 1, time.Second)[0]
	v, _ := NewVerifier(secret)
	if err := v.Verify(q.Header, q.Body); err != nil {
		t.Fatal(err)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestResetTrickleFlood(t *testing.T) {
	r := New(t)
	r.Script("/reset", Reset())
	if resp, err := r.Client().Post(r.URL()+"/reset", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("reset: got an answer %d", resp.StatusCode)
	}
	if q := r.WaitFor(t, "/reset", 1, 5*time.Second)[0]; !q.Aborted || q.Status != 0 {
		t.Fatalf("reset recorded %+v", q)
	}

	// A trickled answer comes whole, slowly; a client with a deadline gives up on it.
	r.Script("/trickle", Trickle(time.Millisecond))
	start := time.Now()
	resp, body := post(t, r.Client(), r.URL()+"/trickle", "", "{}")
	if resp.StatusCode != 200 || body != "ok" || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("trickle: %d %q after %s", resp.StatusCode, body, time.Since(start))
	}
	r.Script("/trickle-slow", Trickle(100*time.Millisecond))
	c := r.Client()
	c.Timeout = 300 * time.Millisecond
	if resp, err := c.Post(r.URL()+"/trickle-slow", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("a slow trickle answered within 300 ms: %d", resp.StatusCode)
	}
	slow := r.WaitUntil(t, "/trickle-slow", 10*time.Second, "the trickle given up", func(reqs []Request) bool { return len(reqs) == 1 && reqs[0].Done })[0]
	if !slow.Aborted || slow.Status != 0 {
		t.Fatalf("a trickle the client gave up on recorded %+v", slow)
	}

	// A flood is cut short by a client that reads a little and closes.
	r.Script("/flood", Flood(1<<30))
	fr, err := r.Client().Post(r.URL()+"/flood", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if fr.ContentLength != 1<<30 {
		t.Fatalf("flood Content-Length %d", fr.ContentLength)
	}
	if n, _ := io.CopyN(io.Discard, fr.Body, 64<<10); n != 64<<10 {
		t.Fatalf("read %d of the flood", n)
	}
	fr.Body.Close()
	q := r.WaitUntil(t, "/flood", 10*time.Second, "the flood cut", func(reqs []Request) bool { return len(reqs) == 1 && reqs[0].Done })[0]
	if q.Written < 64<<10 || q.Written >= 1<<30 {
		t.Fatalf("flood wrote %d bytes to a client that read 64 KiB", q.Written)
	}
}
