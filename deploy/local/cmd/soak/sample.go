package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
)

// hostName is this process in the figures: it hosts the embedded store (and miniredis unless
// REDIS_URL is set), the load generator and the receiver, so its goroutines are the load's as
// much as the store's and are not reported.
const hostName = "soak+store"

// sampler reads every program's resident memory (VmRSS from /proc) and goroutines (go_goroutines
// from its /metrics: the Prometheus Go collector every program registers) every interval.
type sampler struct {
	programs []stack.Program
	client   *http.Client
	start    time.Time

	mu      sync.Mutex
	samples map[string][]point
}

func newSampler(programs []stack.Program, start time.Time) *sampler {
	return &sampler{programs: programs, client: &http.Client{Timeout: 5 * time.Second}, start: start, samples: map[string][]point{}}
}

// names are the programs sampled, in the order they are printed.
func (s *sampler) names() []string {
	out := make([]string, 0, len(s.programs)+1)
	for _, p := range s.programs {
		out = append(out, p.Name)
	}
	return append(out, hostName)
}

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *sampler) sample(ctx context.Context) {
	at := time.Since(s.start)
	got := map[string]point{}
	for _, p := range s.programs {
		got[p.Name] = point{at: at, rss: load.ReadRSS(p.PID).RSS, goroutines: s.goroutines(ctx, p.MetricsURL)}
	}
	got[hostName] = point{at: at, rss: load.ReadRSS(os.Getpid()).RSS, goroutines: -1}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, p := range got {
		s.samples[name] = append(s.samples[name], p)
	}
}

// goroutines scrapes go_goroutines from a program's metrics endpoint; -1 when it cannot.
func (s *sampler) goroutines(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return -1
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	return parseGoroutines(bufio.NewScanner(resp.Body))
}

// parseGoroutines finds the go_goroutines sample in Prometheus text; -1 when absent.
func parseGoroutines(sc *bufio.Scanner) int {
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "go_goroutines")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		return int(v)
	}
	return -1
}

// snapshot copies the samples taken so far.
func (s *sampler) snapshot() map[string][]point {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]point, len(s.samples))
	for k, v := range s.samples {
		out[k] = append([]point(nil), v...)
	}
	return out
}
