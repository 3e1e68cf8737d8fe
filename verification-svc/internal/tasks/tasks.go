// Package tasks is the contract of the expiry task (docs/events.md): queue, type, payload and
// task id, shared by the scheduler that enqueues it and the worker that handles it.
package tasks

import (
	"encoding/json"
	"fmt"

	"rentalplatform/libs/ids"
)

// Queue and type of session expiry.
const (
	QueueVerification = "verification"
	TypeExpire        = "verification_session:expire"
)

// Expire is the payload of a session's expiry task.
type Expire struct {
	Session string `json:"session"`
}

// ID is the task id: one expiry task per session, so scheduling it twice queues it once.
func (e Expire) ID() string { return e.Session + ":expire" }

// Marshal encodes the payload.
func (e Expire) Marshal() []byte {
	b, _ := json.Marshal(e) // one plain field: cannot fail
	return b
}

// ParseExpire decodes a payload, refusing one that does not name a session.
func ParseExpire(b []byte) (Expire, error) {
	var e Expire
	if err := json.Unmarshal(b, &e); err != nil {
		return Expire{}, fmt.Errorf("decode %s payload: %w", TypeExpire, err)
	}
	if !ids.Valid(ids.VerificationSession, e.Session) {
		return Expire{}, fmt.Errorf("decode %s payload: not a session: %s", TypeExpire, b)
	}
	return e, nil
}
