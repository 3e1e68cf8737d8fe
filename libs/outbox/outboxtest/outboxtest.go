// Package outboxtest gives tests an events queue in memory and an outbox relay that publishes
// to it, so a test sees which events a write published without a Redis.
package outboxtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtask"
	"rentalplatform/libs/outbox"
)

// ErrDown is what the queue answers while it is down.
var ErrDown = errors.New("outboxtest: the queue is down")

// Queue records the events published to it. Like asynq, it takes an event id once: a second
// enqueue of an id is a task-id conflict. Its zero value is ready to use.
type Queue struct {
	mu     sync.Mutex
	down   bool
	events []events.Event
	times  map[string]int
	marked bool // the Epoch's marker: unset by Lose
}

// EnqueueContext implements outbox.Enqueuer. A batch task adds its events not seen before,
// and is a conflict when it has none.
func (q *Queue) EnqueueContext(_ context.Context, task *asynq.Task, _ ...asynq.Option) (*asynq.TaskInfo, error) {
	evs, err := eventtask.FromTask(task.Type(), task.Payload())
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return nil, ErrDown
	}
	if q.times == nil {
		q.times = map[string]int{}
	}
	added := 0
	for _, e := range evs {
		if q.times[e.ID]++; q.times[e.ID] == 1 {
			q.events = append(q.events, e)
			added++
		}
	}
	if added == 0 {
		return nil, asynq.ErrTaskIDConflict
	}
	return &asynq.TaskInfo{ID: evs[0].ID}, nil
}

// SetDown makes every publish fail (true) or succeed again (false).
func (q *Queue) SetDown(down bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.down = down
}

// Lose forgets every event published and unsets the Epoch's marker: a Redis that lost its data.
func (q *Queue) Lose() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.events, q.times, q.marked = nil, nil, false
}

// Epoch returns the queue's marker for a relay's Retain: missing at first and after Lose,
// unreadable while the queue is down.
func (q *Queue) Epoch() outbox.Epoch { return epoch{q} }

type epoch struct{ q *Queue }

func (e epoch) Lost(context.Context) (bool, error) {
	e.q.mu.Lock()
	defer e.q.mu.Unlock()
	if e.q.down {
		return false, ErrDown
	}
	return !e.q.marked, nil
}

func (e epoch) Mark(context.Context) error {
	e.q.mu.Lock()
	defer e.q.mu.Unlock()
	if e.q.down {
		return ErrDown
	}
	e.q.marked = true
	return nil
}

// Events returns the events published, each once, in the order they were raised (ids sort by
// creation time; writes publish on goroutines of their own, so arrival order means nothing).
func (q *Queue) Events() []events.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := slices.Clone(q.events)
	slices.SortFunc(out, func(a, b events.Event) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// IDs returns the ids of Events.
func (q *Queue) IDs() []string {
	var out []string
	for _, e := range q.Events() {
		out = append(out, e.ID)
	}
	return out
}

// Repeated returns the ids published more than once.
func (q *Queue) Repeated() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for id, n := range q.times {
		if n > 1 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// NewRelay returns a relay that publishes to q. Its sweep takes every waiting event (no grace
// period) and never runs by itself: tests call Sweep, and Wait for the fast path.
func NewRelay(q *Queue) *outbox.Relay {
	return outbox.NewRelay(outbox.NewPublisher(asynqx.NewProducer(q, nil, propagation.TraceContext{})), nil, time.Hour, 0)
}
