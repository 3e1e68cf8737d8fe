// Package events is the Event envelope (API spec §2.5) as every service builds it and as
// webhooks-svc stores, lists and delivers it. How events travel on the queue (their tasks'
// payloads and span attributes) is package eventtask's.
package events

import (
	"bytes"
	"encoding/json"
	"fmt"
)

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

// Fields is an object as the API renders it, by top-level field: what an update event's
// previous_attributes are made of.
type Fields map[string]json.RawMessage

// FieldsOf renders object (the API's rendering of an aggregate) by top-level field.
func FieldsOf(object any) (Fields, error) {
	b, err := json.Marshal(object)
	if err != nil {
		return nil, fmt.Errorf("render object: %w", err)
	}
	var f Fields
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("render object: %w", err)
	}
	return f, nil
}

// Changed returns the fields of before that after renders differently, with their old values:
// an update's previous_attributes. It is nil when nothing the API shows changed.
func Changed(before, after Fields) map[string]any {
	var out map[string]any
	for k, old := range before {
		if !bytes.Equal(old, after[k]) {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = old
		}
	}
	return out
}
