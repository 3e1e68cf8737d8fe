package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// Raised is an event an aggregate raised: a change its clients hear of, named by the event's
// type and not yet rendered. Aggregates raise them (Recorder); the store renders them through
// the service's Emitter and keeps them in the write that stores the change.
type Raised struct {
	Type string
	// Part is what the event is about when that is not the aggregate itself (a case's debt
	// payment, a request's charge); the Emitter's Parts render it. Nil for the aggregate.
	Part any
	// Update marks an event that carries previous_attributes: the aggregate's top-level fields
	// the change rendered differently, with their values before it.
	Update bool
}

// Recorder keeps the events an aggregate raised since it was loaded or created, until they are
// stored with it. Aggregates embed it.
type Recorder struct{ raised []Raised }

// Raise records an event about the aggregate itself.
func (r *Recorder) Raise(typ string) { r.raised = append(r.raised, Raised{Type: typ}) }

// RaiseUpdate records an event about the aggregate that carries previous_attributes.
func (r *Recorder) RaiseUpdate(typ string) {
	r.raised = append(r.raised, Raised{Type: typ, Update: true})
}

// RaisePart records an event about a part of the aggregate (see Raised.Part).
func (r *Recorder) RaisePart(typ string, part any) {
	r.raised = append(r.raised, Raised{Type: typ, Part: part})
}

// Raised returns the events recorded, oldest first. The slice is the recorder's: read only.
func (r *Recorder) Raised() []Raised { return r.raised }

// Aggregate is what the Emitter needs of an aggregate: its owner, and the events it raised.
type Aggregate interface {
	Account() string
	Livemode() bool
	Raised() []Raised
}

// Routed is an aggregate whose events go to a destination of its own instead of the account's
// webhook endpoints (a verification session's webhook_url); nil means the account's.
type Routed interface {
	EventDestination() *Destination
}

// Renderer renders the events an aggregate raised: what a store needs of an Emitter.
type Renderer[A any] interface {
	Events(ctx context.Context, a A, before func() A) ([]Event, error)
}

// Emitter renders the events aggregates of one kind raise, through the port's renderers: the
// one place an event's object, previous_attributes and request are made.
type Emitter[A Aggregate] struct {
	IDs *ids.Generator
	Now func() time.Time
	// Object renders the aggregate as the API shows it.
	Object func(A) any
	// Parts render, by event type, the object of an event about a part of the aggregate.
	Parts map[string]func(A, any) any
}

var _ Renderer[Aggregate] = (*Emitter[Aggregate])(nil)

// Events renders the events a raised. The aggregate's own rendering is made once and shared
// by every event about it, and kept for the request's answer (WithAnswer). before returns
// the aggregate as it was loaded (nil for a new one); it is called only when an event carries
// previous_attributes. The request the events name is the one in ctx (CausedBy): none for
// background work.
func (e *Emitter[A]) Events(ctx context.Context, a A, before func() A) ([]Event, error) {
	raised := a.Raised()
	if len(raised) == 0 {
		return nil, nil
	}
	var dest *Destination
	if r, ok := any(a).(Routed); ok {
		dest = r.EventDestination()
	}
	env := Event{Object: "event", Account: a.Account(), APIVersion: APIVersion, Created: e.Now().Unix(), Livemode: a.Livemode()}
	if c, _ := ctx.Value(causeKey{}).(*identity.Identity); c != nil {
		env.Request = Request{ID: nonEmpty(c.RequestID), IdempotencyKey: nonEmpty(c.IdempotencyKey)}
	}
	var own, previous json.RawMessage
	out := make([]Event, len(raised))
	for i, r := range raised {
		ev := env
		ev.ID, ev.Type = e.IDs.New(ids.Event), r.Type
		if dest != nil {
			d := *dest
			ev.Destination = &d
		}
		var err error
		if part := e.Parts[r.Type]; part != nil {
			ev.Data.Object, err = json.Marshal(part(a, r.Part))
		} else {
			if own == nil {
				if own, err = json.Marshal(e.Object(a)); err == nil {
					answerOf(ctx).keep(a, own)
				}
			}
			ev.Data.Object = own
		}
		if err != nil {
			return nil, fmt.Errorf("event %s: render object: %w", r.Type, err)
		}
		if r.Update && before != nil {
			if previous == nil {
				if previous, err = e.previous(before(), own); err != nil {
					return nil, fmt.Errorf("event %s: %w", r.Type, err)
				}
			}
			if len(previous) > 0 {
				ev.Data.PreviousAttributes = previous
			}
		}
		out[i] = ev
	}
	return out, nil
}

// previous renders the fields of before that the aggregate, rendered now as after, shows
// differently, with their old values; empty (not nil) when none did.
func (e *Emitter[A]) previous(before A, after json.RawMessage) (json.RawMessage, error) {
	if after == nil {
		return nil, fmt.Errorf("previous attributes of an event about a part")
	}
	was, err := FieldsOf(e.Object(before))
	if err != nil {
		return nil, err
	}
	var now Fields
	if err := json.Unmarshal(after, &now); err != nil {
		return nil, fmt.Errorf("render object: %w", err)
	}
	changed := Changed(was, now)
	if changed == nil {
		return json.RawMessage{}, nil
	}
	b, err := json.Marshal(changed)
	if err != nil {
		return nil, fmt.Errorf("render previous attributes: %w", err)
	}
	return b, nil
}

type causeKey struct{}

// CausedBy returns ctx naming caller's request as the cause of the changes made under it: the
// request of their events. Background work (an expiry, a retry) names none.
func CausedBy(ctx context.Context, caller identity.Identity) context.Context {
	return context.WithValue(ctx, causeKey{}, &caller)
}

// IdempotencyKey is the Idempotency-Key of the request ctx names as the cause of its changes
// (CausedBy); "" for none, and for background work. The store keeps it with what the request
// creates (docstore.Options.IdempotentCreates).
func IdempotencyKey(ctx context.Context) string {
	if c, _ := ctx.Value(causeKey{}).(*identity.Identity); c != nil {
		return c.IdempotencyKey
	}
	return ""
}

type answerKey struct{}

// Answer keeps, for one request, the rendering of the aggregate its change raised events
// about, so the response is the bytes the events hold rather than a second rendering.
type Answer struct {
	of   any
	json []byte
}

// WithAnswer returns ctx with an Answer the changes made under it fill.
func WithAnswer(ctx context.Context) (context.Context, *Answer) {
	a := &Answer{}
	return context.WithValue(ctx, answerKey{}, a), a
}

func answerOf(ctx context.Context) *Answer {
	a, _ := ctx.Value(answerKey{}).(*Answer)
	return a
}

func (a *Answer) keep(of any, json []byte) {
	if a != nil {
		a.of, a.json = of, json
	}
}

// For returns the rendering kept for object, which must be the very aggregate (the same
// pointer) the events were rendered from; false when there is none, and the caller renders.
func (a *Answer) For(object any) ([]byte, bool) {
	if a == nil || a.json == nil || a.of != object {
		return nil, false
	}
	return a.json, true
}
