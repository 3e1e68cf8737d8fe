// Package eventtask is how events travel on the events queue: the queue's task types, the
// payloads of a task of one event and of a batch, and the span attributes that name a batch's
// events. The envelope itself is package events'.
package eventtask

import (
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"
)

// Queue and task types of published events (docs/events.md). A task of TaskType carries one
// event; a task of BatchTaskType the events of one change (MarshalBatch), which cost the queue
// one task instead of one each. BatchTaskType does not start with TaskType: asynq routes a task
// to the longest registered prefix of its type, so a consumer that knows only single events
// leaves a batch unhandled (retried later) rather than failing to decode it.
const (
	Queue         = "events"
	TaskType      = "event"
	BatchTaskType = "batch:events"
)

// MaxBatch is the most events one batch task carries.
const MaxBatch = 100

// Span attributes of a batch task's producer and consumer spans, so a trace search by an
// event's id finds the task that carried it (its task id names only the first event).
const (
	AttrBatchCount = "messaging.batch.message_count" // OpenTelemetry's semantic convention
	AttrEventIDs   = "event.ids"
)

// BatchAttributes are the span attributes of a batch of evs.
func BatchAttributes(evs []events.Event) []attribute.KeyValue {
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return []attribute.KeyValue{attribute.Int(AttrBatchCount, len(evs)), attribute.StringSlice(AttrEventIDs, ids)}
}

// Marshal encodes the internal form (the task payload).
func Marshal(e events.Event) ([]byte, error) { return json.Marshal(e) }

// Unmarshal decodes a task payload, refusing one that is not an event.
func Unmarshal(b []byte) (events.Event, error) {
	var e events.Event
	if err := json.Unmarshal(b, &e); err != nil {
		return events.Event{}, fmt.Errorf("decode event: %w", err)
	}
	return e, check(e)
}

// batch is the payload of a BatchTaskType task.
type batch struct {
	Events []events.Event `json:"events"`
}

// MarshalBatch encodes the payload of a batch task: 1 to MaxBatch events.
func MarshalBatch(evs []events.Event) ([]byte, error) {
	if len(evs) == 0 || len(evs) > MaxBatch {
		return nil, fmt.Errorf("encode event batch: %d events (1 to %d)", len(evs), MaxBatch)
	}
	return json.Marshal(batch{Events: evs})
}

// UnmarshalBatch decodes a batch task's payload, refusing it whole if any element is not an
// event or the count is out of bounds.
func UnmarshalBatch(b []byte) ([]events.Event, error) {
	var p batch
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode event batch: %w", err)
	}
	if len(p.Events) == 0 || len(p.Events) > MaxBatch {
		return nil, fmt.Errorf("decode event batch: %d events (1 to %d)", len(p.Events), MaxBatch)
	}
	for i, e := range p.Events {
		if err := check(e); err != nil {
			return nil, fmt.Errorf("event batch, element %d: %w", i, err)
		}
	}
	return p.Events, nil
}

// FromTask decodes the events of a task on the events queue, of either type.
func FromTask(typ string, payload []byte) ([]events.Event, error) {
	switch typ {
	case TaskType:
		e, err := Unmarshal(payload)
		if err != nil {
			return nil, err
		}
		return []events.Event{e}, nil
	case BatchTaskType:
		return UnmarshalBatch(payload)
	default:
		return nil, fmt.Errorf("decode events: task type %q is not an event's", typ)
	}
}

// check refuses what is not a publishable event.
func check(e events.Event) error {
	if !ids.Valid(ids.Event, e.ID) || e.Type == "" || e.Account == "" || len(e.Data.Object) == 0 {
		return fmt.Errorf("decode event: not an event (id %q, type %q)", e.ID, e.Type)
	}
	if d := e.Destination; d != nil && (d.URL == "" || d.Secret == "") {
		return fmt.Errorf("decode event %s: a destination needs a url and a secret", e.ID)
	}
	return nil
}
