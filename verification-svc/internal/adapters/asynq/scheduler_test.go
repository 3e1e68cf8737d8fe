package asynq

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/libs/asynqx"

	"rentalplatform/verification-svc/internal/tasks"
)

// recorder is an Enqueuer that records task payloads; gate, when set, holds every enqueue until
// it is closed.
type recorder struct {
	mu   sync.Mutex
	ids  []string
	gate chan struct{}
}

func (r *recorder) EnqueueContext(_ context.Context, task *asynq.Task, _ ...asynq.Option) (*asynq.TaskInfo, error) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, string(task.Payload()))
	return &asynq.TaskInfo{}, nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// ScheduleExpiry answers at once and Run enqueues; when Run is stopped, what is buffered is
// still enqueued; when the buffer is full, ScheduleExpiry enqueues itself.
func TestSchedulerEnqueuesInTheBackground(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	s := NewScheduler(asynqx.NewProducer(rec, nil, propagation.TraceContext{}))
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.Run(ctx, slog.New(slog.DiscardHandler)); close(done) }()

	at := time.Now().Add(time.Hour)
	for i := range 3 {
		begin := time.Now()
		if err := s.ScheduleExpiry(t.Context(), "vs_"+string(rune('a'+i)), at); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d > time.Second {
			t.Fatalf("ScheduleExpiry waited %v for a held enqueue", d)
		}
	}
	stop() // stopped while the first enqueue is held: the rest are drained
	close(rec.gate)
	<-done
	if rec.count() != 3 || rec.ids[0] != string(tasks.Expire{Session: "vs_a"}.Marshal()) {
		t.Fatalf("enqueued %v; want the 3 expiries", rec.ids)
	}

	full := &recorder{}
	s = NewScheduler(asynqx.NewProducer(full, nil, propagation.TraceContext{})) // no Run: the buffer fills
	for i := range backlog + 2 {
		if err := s.ScheduleExpiry(t.Context(), "vs_x", at.Add(time.Duration(i))); err != nil {
			t.Fatal(err)
		}
	}
	if full.count() != 2 {
		t.Fatalf("%d enqueued directly with a full buffer; want 2", full.count())
	}
}
