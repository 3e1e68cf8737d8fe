// Package servicetest starts a program's run() in-process for component tests, the way main
// does, and finds the addresses it listens on from its "listening" log lines. Component is the
// check every service behind the gateway passes. Import it from _test.go files only: it links
// the embedded store (testkit).
package servicetest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// RunFunc is the signature of every program's composition root.
type RunFunc func(ctx context.Context, getenv func(string) string, stdout io.Writer) error

// Process is a running program.
type Process struct {
	// Addrs maps listener name (the "listener" field of the log line) to host:port.
	Addrs map[string]string
	logs  *logBuffer
}

// URL returns "http://" + the address of the named listener.
func (p *Process) URL(listener string) string { return "http://" + p.Addrs[listener] }

// Logs returns everything the program has written so far.
func (p *Process) Logs() string { return p.logs.String() }

// Start runs run with env as its whole environment and waits until the listeners named in
// want have logged their addresses. The program is stopped, and must return nil, at cleanup.
func Start(t testing.TB, run RunFunc, env map[string]string, want ...string) *Process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	logs := &logBuffer{}
	done := make(chan error, 1)
	go func() {
		err := run(ctx, func(k string) string { return env[k] }, pw)
		pw.Close()
		done <- err
	}()

	addrs := map[string]string{}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			logs.add(line)
			var rec struct {
				Msg      string `json:"msg"`
				Listener string `json:"listener"`
				Addr     string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				logs.mu.Lock()
				addrs[rec.Listener] = rec.Addr
				all := true
				for _, w := range want {
					if addrs[w] == "" {
						all = false
					}
				}
				logs.mu.Unlock()
				if all && !signalled {
					signalled = true
					close(found)
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()

	select {
	case <-found:
	case err := <-done:
		cancel()
		t.Fatalf("program exited before listening: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("program did not listen on %v within 30s\n%s", want, logs.String())
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("program returned %v on shutdown\n%s", err, logs.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("program did not stop within 20s\n%s", logs.String())
		}
	})
	logs.mu.Lock()
	copied := make(map[string]string, len(addrs))
	for k, v := range addrs {
		copied[k] = v
	}
	logs.mu.Unlock()
	return &Process{Addrs: copied, logs: logs}
}

type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	b.mu.Unlock()
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
