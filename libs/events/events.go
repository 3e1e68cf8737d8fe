// Package events is the Event envelope (API spec §2.5) as every service builds it and as
// webhooks-svc stores, lists and delivers it.
package events

import (
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"rentalplatform/libs/apiversion"
	"rentalplatform/libs/identity"
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
func BatchAttributes(evs []Event) []attribute.KeyValue {
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return []attribute.KeyValue{attribute.Int(AttrBatchCount, len(evs)), attribute.StringSlice(AttrEventIDs, ids)}
}

// Request names the API request that caused an event; both fields are null for background
// transitions.
type Request struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

// Data holds the object as the API returned it at the moment of the change, and on updates the
// changed top-level fields with their previous values.
type Data struct {
	Object             json.RawMessage `json:"object"`
	PreviousAttributes json.RawMessage `json:"previous_attributes,omitempty"`
}

// Destination is where one event goes instead of the account's webhook endpoints: a URL of
// the object's own (a verification session's webhook_url) and the secret that signs its
// deliveries there. It is routing, not content: Render never shows it.
type Destination struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// Event is the internal form of an event: the rendered envelope plus the owning account and,
// for an object that names its own webhook URL, its Destination. PendingWebhooks is only
// known to webhooks-svc.
type Event struct {
	ID              string       `json:"id"`
	Object          string       `json:"object"`
	Type            string       `json:"type"`
	Account         string       `json:"account"`
	APIVersion      string       `json:"api_version"`
	Created         int64        `json:"created"`
	Livemode        bool         `json:"livemode"`
	PendingWebhooks int          `json:"pending_webhooks"`
	Request         Request      `json:"request"`
	Data            Data         `json:"data"`
	Destination     *Destination `json:"destination,omitempty"`
}

// Change describes one customer-visible change.
type Change struct {
	Type     string
	Account  string
	Livemode bool
	// Object is the API object after the change, as the API renders it.
	Object any
	// Previous holds the changed top-level fields with their old values (updates only).
	Previous map[string]any
	// Caller is the API request that made the change; nil for background transitions.
	Caller *identity.Identity
	// Destination, when set, replaces the account's webhook endpoints as where the event is
	// delivered (docs/events.md, "Deliveries to an object's own webhook_url").
	Destination *Destination
}

// New builds the event for a change. The object is rendered to JSON now and kept as bytes, so
// the event shows the object as it was at this moment whatever happens to it later.
func New(gen *ids.Generator, now time.Time, c Change) (Event, error) {
	obj, err := json.Marshal(c.Object)
	if err != nil {
		return Event{}, fmt.Errorf("event %s: render object: %w", c.Type, err)
	}
	e := Event{
		ID:         gen.New(ids.Event),
		Object:     "event",
		Type:       c.Type,
		Account:    c.Account,
		APIVersion: apiversion.Current,
		Created:    now.Unix(),
		Livemode:   c.Livemode,
		Data:       Data{Object: obj},
	}
	if c.Destination != nil {
		d := *c.Destination
		e.Destination = &d
	}
	if c.Previous != nil {
		if e.Data.PreviousAttributes, err = json.Marshal(c.Previous); err != nil {
			return Event{}, fmt.Errorf("event %s: render previous attributes: %w", c.Type, err)
		}
	}
	if c.Caller != nil {
		e.Request.ID = nonEmpty(c.Caller.RequestID)
		e.Request.IdempotencyKey = nonEmpty(c.Caller.IdempotencyKey)
	}
	return e, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Public is the envelope as clients see it: without the account or the destination.
type Public struct {
	ID              string  `json:"id"`
	Object          string  `json:"object"`
	Type            string  `json:"type"`
	APIVersion      string  `json:"api_version"`
	Created         int64   `json:"created"`
	Livemode        bool    `json:"livemode"`
	PendingWebhooks int     `json:"pending_webhooks"`
	Request         Request `json:"request"`
	Data            Data    `json:"data"`
}

// Render returns the event as the API and deliveries show it in the given API version. There is
// one version so far; when a second one changes an object's shape, the conversion goes here.
func Render(e Event, version string) Public {
	return Public{
		ID: e.ID, Object: "event", Type: e.Type, APIVersion: version, Created: e.Created,
		Livemode: e.Livemode, PendingWebhooks: e.PendingWebhooks, Request: e.Request, Data: e.Data,
	}
}

// Marshal encodes the internal form (the task payload).
func Marshal(e Event) ([]byte, error) { return json.Marshal(e) }

// Unmarshal decodes a task payload, refusing one that is not an event.
func Unmarshal(b []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	return e, check(e)
}

// batch is the payload of a BatchTaskType task.
type batch struct {
	Events []Event `json:"events"`
}

// MarshalBatch encodes the payload of a batch task: 1 to MaxBatch events.
func MarshalBatch(evs []Event) ([]byte, error) {
	if len(evs) == 0 || len(evs) > MaxBatch {
		return nil, fmt.Errorf("encode event batch: %d events (1 to %d)", len(evs), MaxBatch)
	}
	return json.Marshal(batch{Events: evs})
}

// UnmarshalBatch decodes a batch task's payload, refusing it whole if any element is not an
// event or the count is out of bounds.
func UnmarshalBatch(b []byte) ([]Event, error) {
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
func FromTask(typ string, payload []byte) ([]Event, error) {
	switch typ {
	case TaskType:
		e, err := Unmarshal(payload)
		if err != nil {
			return nil, err
		}
		return []Event{e}, nil
	case BatchTaskType:
		return UnmarshalBatch(payload)
	default:
		return nil, fmt.Errorf("decode events: task type %q is not an event's", typ)
	}
}

// check refuses what is not a publishable event.
func check(e Event) error {
	if !ids.Valid(ids.Event, e.ID) || e.Type == "" || e.Account == "" || len(e.Data.Object) == 0 {
		return fmt.Errorf("decode event: not an event (id %q, type %q)", e.ID, e.Type)
	}
	if d := e.Destination; d != nil && (d.URL == "" || d.Secret == "") {
		return fmt.Errorf("decode event %s: a destination needs a url and a secret", e.ID)
	}
	return nil
}
