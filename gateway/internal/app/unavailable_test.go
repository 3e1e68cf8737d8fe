package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
)

// downLimiter fails every call: with an error at once, or (hang) only when the call's
// context ends, as a Redis that accepts the connection and never answers.
type downLimiter struct {
	hang  bool
	mu    sync.Mutex
	calls int
}

func (d *downLimiter) Take(ctx context.Context, _ string, _, _ int, _ time.Duration, _ int) (app.RateDecision, error) {
	d.mu.Lock()
	d.calls++
	d.mu.Unlock()
	if d.hang {
		<-ctx.Done()
		return app.RateDecision{}, ctx.Err()
	}
	return app.RateDecision{}, errors.New("dial tcp: connection refused")
}

func (d *downLimiter) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// countingMonitor counts LimiterUnavailable calls by "access/mode".
type countingMonitor struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countingMonitor) LimiterUnavailable(_ context.Context, access domain.Access, mode app.FailMode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n[access.String()+"/"+mode.String()]++
}

// The policy table: reads and writes, each open or closed, against a limiter that fails at
// once and one that outlasts the timeout; a second request in the pause after the failure
// gets the same answer without a limiter call.
func TestRateLimitUnavailablePolicy(t *testing.T) {
	modes := []app.FailMode{app.FailOpen, app.FailClosed}
	for _, hang := range []bool{false, true} {
		for _, readMode := range modes {
			for _, writeMode := range modes {
				for _, access := range []domain.Access{domain.AccessRead, domain.AccessWrite} {
					name := fmt.Sprintf("hang=%v/read=%s/write=%s/%s", hang, readMode, writeMode, access)
					t.Run(name, func(t *testing.T) {
						lim := &downLimiter{hang: hang}
						mon := &countingMonitor{n: map[string]int{}}
						s := newService(t, newMemKeys(), newClock(), app.Options{Limiter: lim, Monitor: mon,
							Limits: app.Limits{TestPerSecond: 5, Timeout: 20 * time.Millisecond,
								UnavailableRead: readMode, UnavailableWrite: writeMode}})
						k, _ := mustCreate(t, s, "acct_a", false)
						want := readMode
						if access == domain.AccessWrite {
							want = writeMode
						}
						for i := 0; i < 2; i++ {
							start := time.Now()
							d, ok := s.RateLimit(context.Background(), k, access)
							if elapsed := time.Since(start); elapsed > time.Second {
								t.Fatalf("request %d took %s: the timeout does not bound the limiter call", i+1, elapsed)
							}
							switch want {
							case app.FailOpen:
								if ok || d != (app.RateDecision{}) {
									t.Fatalf("request %d: %+v %v, want let through without a decision", i+1, d, ok)
								}
							case app.FailClosed:
								if !ok || !d.Unavailable || d.Allowed || d.Limit != 0 {
									t.Fatalf("request %d: %+v %v, want Unavailable", i+1, d, ok)
								}
							}
						}
						if lim.count() != 1 {
							t.Errorf("%d limiter calls, want 1: the failure pauses the limiter", lim.count())
						}
						if got := mon.n[access.String()+"/"+want.String()]; got != 2 || len(mon.n) != 1 {
							t.Errorf("monitor counted %v, want 2 × %s/%s", mon.n, access, want)
						}
					})
				}
			}
		}
	}
}

// After the pause a limiter that is back limits again, in both modes.
func TestRateLimitRecoversAfterOutage(t *testing.T) {
	for _, mode := range []app.FailMode{app.FailOpen, app.FailClosed} {
		t.Run(mode.String(), func(t *testing.T) {
			clk := newClock()
			lim := newFakeLimiter(1)
			lim.fail = errors.New("i/o timeout")
			s := newService(t, newMemKeys(), clk, app.Options{Limiter: lim,
				Limits: app.Limits{TestPerSecond: 1, UnavailableRead: mode, UnavailableWrite: mode}})
			k, _ := mustCreate(t, s, "acct_a", false)
			if d, ok := s.RateLimit(context.Background(), k, domain.AccessWrite); ok != (mode == app.FailClosed) || d.Allowed {
				t.Fatalf("down: %+v %v", d, ok)
			}
			lim.mu.Lock()
			lim.fail = nil
			lim.mu.Unlock()
			clk.advance(time.Second)
			if d, ok := s.RateLimit(context.Background(), k, domain.AccessWrite); !ok || !d.Allowed || d.Unavailable || d.Limit != 1 {
				t.Fatalf("back: %+v %v, want a limited decision", d, ok)
			}
			if d, ok := s.RateLimit(context.Background(), k, domain.AccessWrite); !ok || d.Allowed || d.RetryAfter <= 0 {
				t.Fatalf("back, over the limit: %+v %v, want a refusal", d, ok)
			}
		})
	}
}

// One warning per interval, naming the access and the policy, with the error and how many
// were left out since the last.
func TestRateLimitUnavailableLogIsThrottled(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	s := app.New(newMemKeys(), log, app.Options{Limiter: &downLimiter{},
		Limits: app.Limits{TestPerSecond: 5, UnavailableWrite: app.FailClosed}})
	k, _, err := s.CreateKey(context.Background(), app.CreateKey{Account: "acct_a"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		s.RateLimit(context.Background(), k, domain.AccessWrite)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1:\n%s", len(lines), buf.String())
	}
	for _, want := range []string{"level=WARN", "limiter is unavailable", "access=write", "policy=closed", "connection refused", "suppressed_since_last=0"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line has no %q: %s", want, lines[0])
		}
	}
}
