// Package tasks is the contract of the delivery task (docs/events.md): queue, type, payload
// and task id, shared by the scheduler that enqueues it and the worker that handles it.
package tasks

import (
	"encoding/json"
	"fmt"
	"strconv"

	"rentalplatform/libs/ids"
)

// Queue and type of delivery attempts.
const (
	QueueWebhooks = "webhooks"
	TypeDeliver   = "webhook:deliver"
)

// Deliver is the payload of a delivery attempt task.
type Deliver struct {
	Delivery string `json:"delivery"`
	Attempt  int    `json:"attempt"`
}

// ID is the task id of the attempt: one task per delivery and attempt number, so scheduling
// the same attempt twice queues it once.
func (d Deliver) ID() string { return d.Delivery + ":" + strconv.Itoa(d.Attempt) }

// Marshal encodes the payload.
func (d Deliver) Marshal() []byte {
	b, _ := json.Marshal(d) // two plain fields: cannot fail
	return b
}

// ParseDeliver decodes a payload, refusing one that does not name a delivery and attempt.
func ParseDeliver(b []byte, deliveryPrefix string) (Deliver, error) {
	var d Deliver
	if err := json.Unmarshal(b, &d); err != nil {
		return Deliver{}, fmt.Errorf("decode %s payload: %w", TypeDeliver, err)
	}
	if !ids.Valid(deliveryPrefix, d.Delivery) || d.Attempt < 1 {
		return Deliver{}, fmt.Errorf("decode %s payload: not a delivery attempt: %s", TypeDeliver, b)
	}
	return d, nil
}
