package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// The bench refuses a Redis database another platform runs on or left runnable tasks in, and
// takes one that holds only scheduled tasks (an earlier run's retries, due a day later).
func TestCheckRedisFree(t *testing.T) {
	now := time.Now().Unix()
	tests := []struct {
		name    string
		fill    func(m *miniredis.Miniredis)
		wantErr string // "" for none
	}{
		{"empty", func(*miniredis.Miniredis) {}, ""},
		{"only scheduled tasks", func(m *miniredis.Miniredis) {
			_, _ = m.SetAdd("asynq:queues", "payments")
			m.ZAdd("asynq:{payments}:scheduled", float64(now+86400), "t1")
		}, ""},
		{"a server that expired (killed)", func(m *miniredis.Miniredis) {
			m.ZAdd("asynq:servers", float64(now-60), "asynq:servers:{host:1:a}")
		}, ""},
		{"a live server", func(m *miniredis.Miniredis) {
			m.ZAdd("asynq:servers", float64(now+30), "asynq:servers:{host:1:a}")
		}, "in use: 1 asynq workers"},
		{"pending events", func(m *miniredis.Miniredis) {
			_, _ = m.SetAdd("asynq:queues", "events")
			_, _ = m.Push("asynq:{events}:pending", "t1", "t2")
		}, `2 in "events"`},
		{"a retry of a payment", func(m *miniredis.Miniredis) {
			_, _ = m.SetAdd("asynq:queues", "payments")
			m.ZAdd("asynq:{payments}:retry", float64(now), "t1")
		}, `1 in "payments"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			tt.fill(m)
			// Database 0 of miniredis; the message names the database the URL gives.
			err := checkRedisFree(context.Background(), "redis://"+m.Addr()+"/0")
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), "database "+strconv.Itoa(0)):
				t.Fatalf("err %v does not name the database", err)
			}
		})
	}
}
