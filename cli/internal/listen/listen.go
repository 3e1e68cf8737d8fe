// Package listen is `rental listen`: it reads the account's event stream (GET
// /v1/events/stream) and forwards each event to a local URL as a Standard Webhooks-signed POST,
// resuming after a cut from the last event seen, so a listener neither misses nor repeats one.
package listen

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"rentalplatform/libs/stdwebhooks"

	"rentalplatform/cli/internal/api"
	"rentalplatform/cli/internal/style"
)

// Secret is the signing secret of the events forwarded with key: derived from the key, so it is
// the same on every run and on every machine with the key, and tells nothing about the key.
func Secret(key string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("rental listen: webhook signing secret v1"))
	return stdwebhooks.SecretPrefix + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Config is one listener.
type Config struct {
	Base  string // the gateway's URL
	Key   string
	Agent string // User-Agent
	// ForwardTo receives every event as a signed POST; empty only prints them.
	ForwardTo string
	// Types are the event types forwarded ("payment_request.succeeded", or
	// "payment_request.*"); empty forwards all.
	Types []string
	// Out gets a line per event and per forward; Log gets the listener's own news
	// (ready, reconnecting, gaps).
	Out, Log io.Writer
	Style    style.Styler
	// Stream reads the stream (no overall timeout); Forward posts to ForwardTo.
	Stream, Forward *http.Client
	// Backoff is the pause before the n-th reconnection in a row after a failure (n from 1).
	Backoff func(n int) time.Duration
	// Silence, when not zero, overrides how long a stream may stay silent before it is
	// taken as dead (three of the heartbeat intervals the stream announces).
	Silence time.Duration
	// Now is time.Now when nil.
	Now func() time.Time
}

// DefaultBackoff waits 1 s, doubling up to 30 s, with ±20 % jitter.
func DefaultBackoff(n int) time.Duration {
	d := time.Second << min(n-1, 5)
	d = min(d, 30*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Stats counts what a listener did.
type Stats struct {
	Connections, Events, Forwarded, Skipped, Duplicates, Gaps int64
}

// Listener runs a Config.
type Listener struct {
	cfg    Config
	secret []byte
	last   string // the position to resume after
	seen   *recent
	ready  bool // "Ready" told
	stats  Stats
	silent atomic.Bool
}

// New returns the listener of cfg.
func New(cfg Config) *Listener {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	key, _ := stdwebhooks.DecodeSecret(Secret(cfg.Key)) // made by Secret: always decodes
	return &Listener{cfg: cfg, secret: key, seen: newRecent(10000)}
}

// Stats returns what the listener has done so far; call it once Run has returned.
func (l *Listener) Stats() Stats { return l.stats }

// Run listens until ctx ends (nil) or the API refuses the listener (its error): a refused key,
// a bad request. A cut, a silent stream or an unreachable gateway are reconnected after.
func (l *Listener) Run(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		before := l.stats.Connections
		err := l.connect(ctx)
		if l.stats.Connections > before {
			failures = 0 // it was connected: the backoff starts again from its first step
		}
		if ctx.Err() != nil {
			return nil
		}
		var ae *api.APIError
		if errors.As(err, &ae) && ae.Status != http.StatusTooManyRequests && ae.Status < 500 {
			return err
		}
		if err == nil {
			failures = 0 // the stream ended as planned: resume at once
			continue
		}
		failures++
		wait := l.cfg.Backoff(failures)
		fmt.Fprintf(l.cfg.Log, "%s the stream was cut (%v); resuming in %s\n",
			l.cfg.Style.Yellow("!"), err, wait.Round(100*time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	return nil
}

// connect reads one response of the stream until it ends: nil when it ended as planned.
func (l *Listener) connect(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(l.cfg.Base, "/")+"/v1/events/stream", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+l.cfg.Key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", l.cfg.Agent)
	if l.last != "" {
		req.Header.Set("Last-Event-ID", l.last)
	}
	res, err := l.cfg.Stream.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return api.ErrorOf(res.StatusCode, raw)
	}
	l.stats.Connections++

	// A watchdog ends a stream that stays silent: no event and no heartbeat for three
	// intervals. Every byte read puts it off.
	body := &activity{r: res.Body, at: make(chan struct{}, 1)}
	silence := l.cfg.Silence
	if silence == 0 {
		silence = 30 * time.Second // until the stream says its interval
	}
	setSilence := make(chan time.Duration, 1)
	l.silent.Store(false)
	go func() {
		t := time.NewTimer(silence)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case d := <-setSilence:
				silence = d
			case <-body.at:
			case <-t.C:
				l.silent.Store(true)
				cancel()
				return
			}
			t.Reset(silence)
		}
	}()

	r := newSSEReader(body)
	for {
		m, err := r.next()
		if err != nil {
			if l.silent.Load() {
				return fmt.Errorf("no event and no heartbeat for %s", silence)
			}
			return err
		}
		switch m.event {
		case "ready":
			var ready struct {
				Heartbeat int64 `json:"heartbeat_interval_ms"`
				Livemode  bool  `json:"livemode"`
			}
			json.Unmarshal([]byte(m.data), &ready)
			if l.cfg.Silence == 0 && ready.Heartbeat > 0 {
				setSilence <- 3 * time.Duration(ready.Heartbeat) * time.Millisecond
			}
			if l.last == "" {
				l.last = m.id
			}
			if !l.ready {
				l.ready = true
				mode := "test"
				if ready.Livemode {
					mode = "live"
				}
				fmt.Fprintf(l.cfg.Log, "%s Listening to %s-mode events; forwarding to %s. Your webhook signing secret is %s (^C to quit)\n",
					l.cfg.Style.Green("Ready!"), mode, orNone(l.cfg.ForwardTo), Secret(l.cfg.Key))
			}
		case "gap":
			l.stats.Gaps++
			var n struct{ Message string }
			json.Unmarshal([]byte(m.data), &n)
			fmt.Fprintf(l.cfg.Log, "%s %s\n", l.cfg.Style.Yellow("!"), n.Message)
		case "reconnect":
			return nil
		case "message":
			l.handle(ctx, []byte(m.data))
			if m.hasID {
				l.last = m.id
			}
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "nowhere (printing only)"
	}
	return s
}

// handle prints and forwards one event.
func (l *Listener) handle(ctx context.Context, data []byte) {
	var ev struct{ ID, Type string }
	if err := json.Unmarshal(data, &ev); err != nil || ev.ID == "" {
		fmt.Fprintf(l.cfg.Log, "%s skipped a message that is not an event: %.80s\n", l.cfg.Style.Yellow("!"), data)
		return
	}
	if !l.seen.add(ev.ID) {
		l.stats.Duplicates++ // published again after Redis lost its data: already forwarded
		return
	}
	l.stats.Events++
	if !Matches(l.cfg.Types, ev.Type) {
		l.stats.Skipped++
		return
	}
	now := l.cfg.Now()
	fmt.Fprintf(l.cfg.Out, "%s   --> %s [%s]\n", now.Format("2006-01-02 15:04:05"), l.cfg.Style.Bold(ev.Type), ev.ID)
	if l.cfg.ForwardTo == "" {
		return
	}
	status, took, err := l.forward(ctx, ev.ID, data)
	now = l.cfg.Now()
	if err != nil {
		fmt.Fprintf(l.cfg.Out, "%s   <-- %s POST %s: %v\n", now.Format("2006-01-02 15:04:05"), l.cfg.Style.Red("[ERR]"), l.cfg.ForwardTo, err)
		return
	}
	l.stats.Forwarded++
	code := fmt.Sprintf("[%d]", status)
	if status >= 200 && status < 300 {
		code = l.cfg.Style.Green(code)
	} else {
		code = l.cfg.Style.Red(code)
	}
	fmt.Fprintf(l.cfg.Out, "%s   <-- %s POST %s (%d ms)\n", now.Format("2006-01-02 15:04:05"), code, l.cfg.ForwardTo, took.Milliseconds())
}

// forward posts one event to ForwardTo, signed as webhooks-svc signs deliveries.
func (l *Listener) forward(ctx context.Context, id string, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.ForwardTo, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	ts := l.cfg.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", l.cfg.Agent)
	req.Header.Set(stdwebhooks.HeaderID, id)
	req.Header.Set(stdwebhooks.HeaderTimestamp, fmt.Sprint(ts))
	req.Header.Set(stdwebhooks.HeaderSignature, stdwebhooks.Sign([][]byte{l.secret}, id, ts, body))
	start := time.Now()
	res, err := l.cfg.Forward.Do(req)
	if err != nil {
		return 0, 0, err
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	return res.StatusCode, time.Since(start), nil
}

// Matches reports whether an event of type t is one of types: an exact type, a family's
// "family.*", or "*"; no types match all.
func Matches(types []string, t string) bool {
	if len(types) == 0 {
		return true
	}
	for _, w := range types {
		if w == "*" || w == t {
			return true
		}
		if fam, ok := strings.CutSuffix(w, ".*"); ok && strings.HasPrefix(t, fam+".") {
			return true
		}
	}
	return false
}

// activity passes reads through and signals each one that got bytes.
type activity struct {
	r  io.Reader
	at chan struct{}
}

func (a *activity) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		select {
		case a.at <- struct{}{}:
		default:
		}
	}
	return n, err
}

// recent remembers the last n event ids.
type recent struct {
	ring []string
	next int
	set  map[string]struct{}
}

func newRecent(n int) *recent {
	return &recent{ring: make([]string, n), set: make(map[string]struct{}, n)}
}

// add reports whether id is new, and remembers it.
func (r *recent) add(id string) bool {
	if _, ok := r.set[id]; ok {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.set, old)
	}
	r.ring[r.next] = id
	r.set[id] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
	return true
}
