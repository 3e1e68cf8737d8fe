// Package asynq schedules session expiry as asynq tasks on the "verification" queue.
package asynq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/asynqx"

	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/tasks"
)

// Scheduler implements app.Scheduler. It enqueues in the background (Run), off the request
// path: an expiry is due days later, the session is stored before it is scheduled, and the
// sweep expires any session whose task never made it (a crash with tasks still buffered, a
// Redis outage). On the embedded Redis an enqueue waits for the one lock every Lua script
// holds, which was most of a create's tail latency (docs/events.md, "Verification sessions").
type Scheduler struct {
	producer *asynqx.Producer
	todo     chan expiry
}

type expiry struct {
	ctx     context.Context // the create's, without its cancellation: the task joins its trace
	session string
	at      time.Time
}

var _ app.Scheduler = (*Scheduler)(nil)

// backlog is how many expiries may wait for Run; beyond it ScheduleExpiry enqueues itself, so
// a backlog never grows without bound.
const backlog = 4096

// NewScheduler returns a scheduler enqueuing through producer once Run runs.
func NewScheduler(producer *asynqx.Producer) *Scheduler {
	return &Scheduler{producer: producer, todo: make(chan expiry, backlog)}
}

// maxRetries is how often asynq reruns an expiry whose write failed (the store was down); the
// sweep catches the session anyway once they run out.
const maxRetries = 10

// drainTimeout bounds how long Run keeps enqueueing what is buffered once ctx ends.
const drainTimeout = 5 * time.Second

// ScheduleExpiry implements app.Scheduler: the expiry is handed to Run, or enqueued at once
// when Run is behind by backlog expiries. The task id is "<session>:expire": an expiry already
// queued is not queued again.
func (s *Scheduler) ScheduleExpiry(ctx context.Context, session string, at time.Time) error {
	e := expiry{ctx: context.WithoutCancel(ctx), session: session, at: at}
	select {
	case s.todo <- e:
		return nil
	default:
		return s.enqueue(e)
	}
}

// Run enqueues the expiries handed to ScheduleExpiry until ctx ends, then what is still
// buffered (for at most drainTimeout; the sweep takes the rest). log reports a failed enqueue.
func (s *Scheduler) Run(ctx context.Context, log *slog.Logger) {
	report := func(e expiry, err error) {
		if err != nil {
			log.WarnContext(e.ctx, "scheduling a session's expiry; the expiry sweep will catch it",
				"session", e.session, "error", err.Error())
		}
	}
	for {
		select {
		case e := <-s.todo:
			report(e, s.enqueue(e))
		case <-ctx.Done():
			deadline := time.Now().Add(drainTimeout)
			for time.Now().Before(deadline) {
				select {
				case e := <-s.todo:
					report(e, s.enqueue(e))
				default:
					return
				}
			}
			return
		}
	}
}

func (s *Scheduler) enqueue(e expiry) error {
	p := tasks.Expire{Session: e.session}
	opts := []asynq.Option{
		asynq.Queue(tasks.QueueVerification), asynq.TaskID(p.ID()), asynq.MaxRetry(maxRetries),
		asynq.Timeout(30 * time.Second),
	}
	if time.Until(e.at) > 0 {
		opts = append(opts, asynq.ProcessAt(asynqx.NotBefore(e.at)))
	}
	_, err := s.producer.Enqueue(e.ctx, tasks.TypeExpire, p.Marshal(), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("schedule %s: %w", p.ID(), err)
	}
	return nil
}
