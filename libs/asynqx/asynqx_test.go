package asynqx

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	task := asynq.NewTask("event", nil)
	if d := RetryDelay(3, fmt.Errorf("recovered: %w", asynq.ErrLeaseExpired), task); d != 0 {
		t.Fatalf("a task whose worker died waits %s, want 0", d)
	}
	// Anything else backs off as asynq does by default: at least 15 s, growing with n.
	for n := 0; n < 3; n++ {
		if d := RetryDelay(n, errors.New("store unavailable"), task); d < 15*time.Second {
			t.Fatalf("retry %d of a failed task after %s, want asynq's back-off (≥ 15 s)", n, d)
		}
	}
	if ServerConfig(map[string]int{"q": 1}, 1, slog.New(slog.DiscardHandler)).RetryDelayFunc == nil {
		t.Fatal("ServerConfig does not set RetryDelay")
	}
}
