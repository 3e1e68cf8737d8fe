package service

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every keeps running a job that fails (logging each failure with the job's name) and returns
// once its context ends.
func TestEveryRunsUntilCanceledAndLogsFailures(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))
	ctx, cancel := context.WithCancel(t.Context())
	runs := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, log, "sweep", time.Millisecond, func(context.Context) error {
			select {
			case runs <- struct{}{}:
			default: // the test has seen enough runs
			}
			return errors.New("store down")
		})
	}()
	for range 3 {
		<-runs
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "job=sweep") || !strings.Contains(logs.String(), "store down") {
		t.Fatalf("failures not logged with the job's name: %s", logs.String())
	}
}

// With AtStart the first run does not wait for the first tick; without it, it does.
func TestEveryAtStart(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		opts []EveryOption
		want bool
	}{{nil, false}, {[]EveryOption{AtStart()}, true}} {
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan struct{}, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			Every(ctx, log, "reconcile", time.Hour, func(context.Context) error {
				ran <- struct{}{}
				return nil
			}, tc.opts...)
		}()
		select {
		case <-ran:
			if !tc.want {
				t.Error("ran before the first tick without AtStart")
			}
		case <-time.After(200 * time.Millisecond):
			if tc.want {
				t.Error("did not run at start with AtStart")
			}
		}
		cancel()
		<-done
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
