// Package receiver is a webhook receiver for end-to-end tests: an HTTPS server on 127.0.0.1
// (self-signed, so the platform runs with WEBHOOKS_TLS_INSECURE=true) that records every
// request it gets and answers each path by a programmable script (fail a few times, answer
// 410, 429/503 with Retry-After, redirect, sleep, hold until released), with helpers to wait
// for what a test expects. It also holds an independent Standard Webhooks verifier (verify.go).
package receiver

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// MaxBody is the largest request body recorded; the rest is read and dropped.
const MaxBody = 4 << 20

// Request is one request the receiver got and what it answered.
type Request struct {
	Seq    int       // 1, 2, … in arrival order over all paths
	Time   time.Time // arrival
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Status is the status answered; 0 while the request is in flight or when the client went
	// away before the answer was written (Aborted).
	Status   int
	Done     bool      // the handler has finished (answered or aborted)
	Aborted  bool      // the client closed the connection (or the receiver closed) first
	Answered time.Time // when the handler finished
	// Written is how many bytes of the answer's body the client took (Flood): what a sender
	// read of it, give or take the connection's buffers.
	Written int64
}

// ID is the webhook-id header (the event id on this platform).
func (r Request) ID() string { return r.Header.Get(HeaderID) }

// Succeeded reports whether the receiver answered 2xx.
func (r Request) Succeeded() bool { return r.Status >= 200 && r.Status < 300 }

// Event is the part of an event envelope tests look at.
type Event struct {
	ID              string `json:"id"`
	Object          string `json:"object"`
	Type            string `json:"type"`
	APIVersion      string `json:"api_version"`
	Created         int64  `json:"created"`
	Livemode        bool   `json:"livemode"`
	PendingWebhooks int    `json:"pending_webhooks"`
	Data            struct {
		Object             map[string]any `json:"object"`
		PreviousAttributes map[string]any `json:"previous_attributes"`
	} `json:"data"`
}

// ObjectID is data.object.id.
func (e Event) ObjectID() string {
	id, _ := e.Data.Object["id"].(string)
	return id
}

// Event decodes the body as an event envelope; a zero Event when it is not JSON.
func (r Request) Event() Event {
	var e Event
	_ = json.Unmarshal(r.Body, &e)
	return e
}

// Step is one part of a path's response script.
type Step struct {
	// Status to answer; 200 when zero.
	Status int
	// N is how many requests this step answers before the next step takes over; 0 means
	// every further request. After the last step is used up the receiver answers 200.
	N int
	// Delay before answering (a slow receiver); the request is aborted if the client leaves.
	Delay time.Duration
	// Hold, when non-nil, blocks the answer until the channel is closed (or the client leaves).
	Hold <-chan struct{}
	// RetryAfter and Location set those headers when not empty.
	RetryAfter string
	Location   string
	// Body of the answer; "ok" / the status text when empty.
	Body string
	// Reset drops the connection without an answer.
	Reset bool
	// Trickle sends the answer's status line and headers one byte every Trickle (a receiver
	// too slow to answer), until the client leaves or the answer is out.
	Trickle time.Duration
	// Flood answers the status with a body of Flood bytes, written as fast as the client takes
	// them (Request.Written counts them).
	Flood int64
}

// Reset drops the connection of every request without answering.
func Reset() Step { return Step{Reset: true} }

// Trickle answers 200 to every request one byte of its headers every d.
func Trickle(d time.Duration) Step { return Step{Status: http.StatusOK, Trickle: d} }

// Flood answers 200 to every request with a body of n bytes.
func Flood(n int64) Step { return Step{Status: http.StatusOK, Flood: n} }

// OK answers 200 to every request.
func OK() Step { return Step{Status: http.StatusOK} }

// Fail answers status to the next n requests.
func Fail(n, status int) Step { return Step{Status: status, N: n} }

// Status answers status to every request.
func Status(status int) Step { return Step{Status: status} }

// Gone answers 410 to every request.
func Gone() Step { return Step{Status: http.StatusGone} }

// RetryAfter answers status (429 or 503) with a Retry-After header to the next n requests.
func RetryAfter(n, status int, after string) Step {
	return Step{Status: status, N: n, RetryAfter: after}
}

// Redirect answers 302 to location to every request.
func Redirect(location string) Step { return Step{Status: http.StatusFound, Location: location} }

// Sleep answers 200 after d to every request.
func Sleep(d time.Duration) Step { return Step{Status: http.StatusOK, Delay: d} }

// Hold answers 200 to every request once release is closed.
func Hold(release <-chan struct{}) Step { return Step{Status: http.StatusOK, Hold: release} }

type script struct {
	steps []Step
	perID bool
	pos   map[string]*cursor // by webhook-id when perID, else the single key ""
}

type cursor struct{ step, used int }

// next returns the step answering a request with this webhook-id and advances the script.
func (s *script) next(id string) Step {
	key := ""
	if s.perID {
		key = id
	}
	c := s.pos[key]
	if c == nil {
		c = &cursor{}
		s.pos[key] = c
	}
	for c.step < len(s.steps) {
		st := s.steps[c.step]
		if st.N == 0 || c.used < st.N {
			c.used++
			return st
		}
		c.step++
		c.used = 0
	}
	return OK()
}

// Receiver is a running test receiver.
type Receiver struct {
	srv  *httptest.Server
	done chan struct{}

	mu      sync.Mutex
	reqs    []*Request
	scripts map[string]*script
	changed chan struct{} // closed and replaced on every change
	closed  bool
}

// New starts a receiver on 127.0.0.1 and closes it when the test ends.
func New(t testing.TB) *Receiver {
	t.Helper()
	r := Start()
	t.Cleanup(r.Close)
	return r
}

// Start starts a receiver on 127.0.0.1; the caller closes it.
func Start() *Receiver {
	r := &Receiver{
		done:    make(chan struct{}),
		scripts: map[string]*script{},
		changed: make(chan struct{}),
	}
	// NewUnstartedServer listens on 127.0.0.1:0; its certificate is for 127.0.0.1, ::1 and
	// example.com.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	// Aborted handshakes (a killed client) are expected in fault tests; keep stderr quiet.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	r.srv = srv
	return r
}

// URL is the receiver's base URL, "https://127.0.0.1:<port>"; append a path per endpoint.
func (r *Receiver) URL() string { return r.srv.URL }

// Addr is the receiver's host:port.
func (r *Receiver) Addr() string { return r.srv.Listener.Addr().String() }

// Client is an HTTP client that trusts the receiver's certificate and does not follow
// redirects.
func (r *Receiver) Client() *http.Client {
	return &http.Client{
		Transport:     r.srv.Client().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Close releases every held or sleeping request and stops the server.
func (r *Receiver) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.done)
	r.mu.Unlock()
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// Script sets the response script of path (exact match), shared by every request to it.
// Paths without a script answer 200.
func (r *Receiver) Script(path string, steps ...Step) {
	r.setScript(path, false, steps)
}

// ScriptPerEvent sets a script that each distinct webhook-id runs through on its own: with
// Fail(3, 500), OK() every event fails three times and then succeeds, whatever else arrives
// at the same path in between.
func (r *Receiver) ScriptPerEvent(path string, steps ...Step) {
	r.setScript(path, true, steps)
}

func (r *Receiver) setScript(path string, perID bool, steps []Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scripts[path] = &script{steps: steps, perID: perID, pos: map[string]*cursor{}}
}

func (r *Receiver) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, MaxBody))
	_, _ = io.Copy(io.Discard, hr.Body)
	req := &Request{
		Time:   time.Now(),
		Method: hr.Method,
		Path:   hr.URL.Path,
		Header: hr.Header.Clone(),
		Body:   body,
	}
	r.mu.Lock()
	req.Seq = len(r.reqs) + 1
	r.reqs = append(r.reqs, req)
	step := OK()
	if s := r.scripts[req.Path]; s != nil {
		step = s.next(req.ID())
	}
	r.notifyLocked()
	r.mu.Unlock()

	aborted := false
	if step.Delay > 0 {
		timer := time.NewTimer(step.Delay)
		select {
		case <-timer.C:
		case <-hr.Context().Done():
			aborted = true
		case <-r.done:
			aborted = true
		}
		timer.Stop()
	}
	if step.Hold != nil && !aborted {
		select {
		case <-step.Hold:
		case <-hr.Context().Done():
			aborted = true
		case <-r.done:
			aborted = true
		}
	}
	status := step.Status
	if status == 0 {
		status = http.StatusOK
	}
	switch {
	case aborted:
	case step.Reset:
		aborted = true
	case step.Trickle > 0:
		aborted = !r.trickle(w, hr, status, step.Trickle)
	case step.Flood > 0:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(step.Flood, 10))
		w.WriteHeader(status)
		n, err := io.Copy(w, io.LimitReader(zeros{}, step.Flood))
		r.mu.Lock()
		req.Written = n
		r.mu.Unlock()
		aborted = err != nil
	default:
		if step.RetryAfter != "" {
			w.Header().Set("Retry-After", step.RetryAfter)
		}
		if step.Location != "" {
			w.Header().Set("Location", step.Location)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		b := step.Body
		if b == "" {
			b = strings.ToLower(http.StatusText(status))
		}
		_, _ = io.WriteString(w, b)
	}

	r.mu.Lock()
	req.Done = true
	req.Answered = time.Now()
	if aborted {
		req.Aborted = true
	} else {
		req.Status = status
	}
	r.notifyLocked()
	r.mu.Unlock()
	if aborted {
		// Returning normally would let net/http send its default empty 200, which a client
		// whose cancellation is still in flight can read as an answer: abort the connection.
		panic(http.ErrAbortHandler)
	}
}

// trickle writes a whole answer of status, one byte every d, on the hijacked connection; it
// reports whether the answer went out before the client (or the receiver) gave up.
func (r *Receiver) trickle(w http.ResponseWriter, hr *http.Request, status int, d time.Duration) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	answer := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", status, http.StatusText(status))
	for i := range len(answer) {
		select {
		case <-time.After(d):
		case <-r.done:
			return false
		}
		if _, err := conn.Write([]byte{answer[i]}); err != nil {
			return false
		}
	}
	return true
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func (r *Receiver) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Requests returns copies of the requests to path in arrival order; every request when path
// is "".
func (r *Receiver) Requests(path string) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requestsLocked(path)
}

func (r *Receiver) requestsLocked(path string) []Request {
	var out []Request
	for _, q := range r.reqs {
		if path == "" || q.Path == path {
			c := *q
			c.Header = q.Header.Clone()
			out = append(out, c)
		}
	}
	return out
}

// Count is the number of requests to path ("" for all) so far.
func (r *Receiver) Count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.reqs {
		if path == "" || q.Path == path {
			n++
		}
	}
	return n
}

// WaitFor waits until at least n requests to path ("" for all) have arrived and returns them
// all; it fails the test after timeout, listing what did arrive.
func (r *Receiver) WaitFor(t testing.TB, path string, n int, timeout time.Duration) []Request {
	t.Helper()
	return r.WaitUntil(t, path, timeout, fmt.Sprintf("%d requests", n), func(reqs []Request) bool { return len(reqs) >= n })
}

// WaitForAnswered is WaitFor counting only requests the receiver has finished answering.
func (r *Receiver) WaitForAnswered(t testing.TB, path string, n int, timeout time.Duration) []Request {
	t.Helper()
	return r.WaitUntil(t, path, timeout, fmt.Sprintf("%d answered requests", n), func(reqs []Request) bool {
		c := 0
		for _, q := range reqs {
			if q.Done && !q.Aborted {
				c++
			}
		}
		return c >= n
	})
}

// WaitUntil waits until cond holds for the requests to path ("" for all) and returns them; it
// fails the test after timeout, naming what it waited for and listing what arrived.
func (r *Receiver) WaitUntil(t testing.TB, path string, timeout time.Duration, what string, cond func([]Request) bool) []Request {
	t.Helper()
	reqs, ok := r.Await(path, timeout, cond)
	if !ok {
		t.Fatalf("receiver: waited %s for %s at %q; got %d:\n%s", timeout, what, path, len(reqs), Summary(reqs))
	}
	return reqs
}

// Await is WaitUntil without a test: it reports whether cond held before the timeout.
func (r *Receiver) Await(path string, timeout time.Duration, cond func([]Request) bool) ([]Request, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		reqs := r.requestsLocked(path)
		changed := r.changed
		r.mu.Unlock()
		if cond(reqs) {
			return reqs, true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return reqs, false
		}
	}
}

// Summary renders requests one per line for failure messages.
func Summary(reqs []Request) string {
	var b strings.Builder
	for _, q := range reqs {
		e := q.Event()
		state := fmt.Sprint(q.Status)
		switch {
		case q.Aborted:
			state = "aborted"
		case !q.Done:
			state = "in flight"
		}
		fmt.Fprintf(&b, "  #%d %s %s %s id=%s type=%s object=%s -> %s\n",
			q.Seq, q.Time.Format("15:04:05.000"), q.Method, q.Path, q.ID(), e.Type, e.ObjectID(), state)
	}
	return b.String()
}
