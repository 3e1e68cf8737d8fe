// Package eventstest builds events for tests, as a service would have raised them: a service
// itself raises events on its aggregates and its store renders them (events.Emitter).
package eventstest

import (
	"encoding/json"
	"fmt"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

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
	Destination *events.Destination
}

// New builds the event for a change. The object is rendered to JSON now and kept as bytes, so
// the event shows the object as it was at this moment whatever happens to it later.
func New(gen *ids.Generator, now time.Time, c Change) (events.Event, error) {
	obj, err := json.Marshal(c.Object)
	if err != nil {
		return events.Event{}, fmt.Errorf("event %s: render object: %w", c.Type, err)
	}
	e := events.Event{
		ID:         gen.New(ids.Event),
		Object:     "event",
		Type:       c.Type,
		Account:    c.Account,
		APIVersion: events.APIVersion,
		Created:    now.Unix(),
		Livemode:   c.Livemode,
		Data:       events.Data{Object: obj},
	}
	if c.Destination != nil {
		d := *c.Destination
		e.Destination = &d
	}
	if c.Previous != nil {
		if e.Data.PreviousAttributes, err = json.Marshal(c.Previous); err != nil {
			return events.Event{}, fmt.Errorf("event %s: render previous attributes: %w", c.Type, err)
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
