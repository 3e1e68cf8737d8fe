package domain

import (
	"rentalplatform/libs/events"
)

// Destination delivery: an event whose object names its own webhook URL (a verification
// session's webhook_url) carries an events.Destination, and is delivered there instead of to
// the account's endpoints: one delivery, with no endpoint, signed with the destination's
// secret and retried like any other (docs/events.md).

// DestinationEndpoint returns the endpoint an event with a destination is delivered to: stored
// nowhere (no id), always enabled, receiving every type, rendering the event in the version it
// was made in and signing with the destination's secret. ok is false for an event without a
// destination.
func DestinationEndpoint(ev events.Event) (ep *Endpoint, ok bool) {
	d := ev.Destination
	if d == nil {
		return nil, false
	}
	return Rehydrate(State{
		Account: ev.Account, Livemode: ev.Livemode, URL: d.URL, EnabledEvents: []string{"*"},
		Status: StatusEnabled, Secret: d.Secret, APIVersion: ev.APIVersion,
	}), true
}

// IsDestination reports whether the endpoint is an event's own destination rather than a
// stored endpoint: it has no health to keep and cannot be disabled.
func (e *Endpoint) IsDestination() bool { return e.id == "" }

// ToDestination reports whether the delivery goes to its event's destination rather than to a
// stored endpoint.
func (d *Delivery) ToDestination() bool { return d.endpoint == "" }
