// Package tasks is the contract of the collection attempt task: queue, type, payload and task
// id, shared by the scheduler that enqueues it and the worker that handles it.
package tasks

import (
	"encoding/json"
	"fmt"
	"strconv"

	"rentalplatform/libs/ids"
)

// Queue and type of collection attempts.
const (
	QueuePayments = "payments"
	TypeAttempt   = "payment_request:attempt"
)

// Attempt is the payload of an attempt task. Its fields are short: a scheduled retry is held
// in Redis for up to three days, and every byte counts a hundred thousand times over.
type Attempt struct {
	Request string `json:"r"`
	N       int    `json:"n"`
}

// ID is the task id: one task per request and attempt, so scheduling an attempt twice queues
// it once.
func (a Attempt) ID() string { return a.Request + ":" + strconv.Itoa(a.N) }

// Marshal encodes the payload.
func (a Attempt) Marshal() []byte {
	b, _ := json.Marshal(a) // a string and an int: cannot fail
	return b
}

// ParseAttempt decodes a payload, refusing one that does not name a request and attempt.
func ParseAttempt(b []byte) (Attempt, error) {
	var a Attempt
	if err := json.Unmarshal(b, &a); err != nil {
		return Attempt{}, fmt.Errorf("decode %s payload: %w", TypeAttempt, err)
	}
	if !ids.Valid(ids.PaymentRequest, a.Request) || a.N < 1 {
		return Attempt{}, fmt.Errorf("decode %s payload: not an attempt: %s", TypeAttempt, b)
	}
	return a, nil
}
