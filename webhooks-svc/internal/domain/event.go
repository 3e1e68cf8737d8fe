package domain

import (
	"slices"

	"rentalplatform/libs/events"
)

// Target is one endpoint an event is delivered to, by which delivery, and how that delivery
// stands.
type Target struct {
	Delivery string
	Endpoint string
	Status   DeliveryStatus
}

// EventRecord is a stored event with the deliveries it fanned out to. The endpoints are chosen
// once, when the event is first stored, so a fan-out interrupted by a crash is completed on
// redelivery with the same deliveries.
type EventRecord struct {
	Event   events.Event
	Targets []Target
	// FannedOut tells that the deliveries of every target are stored. Until then a fan-out
	// interrupted with its task lost (the process died and Redis lost what it held) leaves the
	// event stored and delivered nowhere: the sweep finds it by this (EventRepository.Unfanned).
	FannedOut bool
}

// NewEventRecord returns the record of ev, about to be delivered to targets (all pending). A
// record with no target has nothing to fan out.
func NewEventRecord(ev events.Event, targets []Target) *EventRecord {
	r := &EventRecord{Event: ev, Targets: slices.Clone(targets), FannedOut: len(targets) == 0}
	r.Event.PendingWebhooks = r.PendingWebhooks()
	return r
}

// SetStatus records where a delivery stands and reports whether that changed anything.
func (r *EventRecord) SetStatus(delivery string, s DeliveryStatus) bool {
	for i := range r.Targets {
		if r.Targets[i].Delivery == delivery && r.Targets[i].Status != s {
			r.Targets[i].Status = s
			r.Event.PendingWebhooks = r.PendingWebhooks()
			return true
		}
	}
	return false
}

// PendingWebhooks counts the deliveries still pending.
func (r *EventRecord) PendingWebhooks() int { return r.count(DeliveryPending) }

// FailedWebhooks counts the deliveries that failed.
func (r *EventRecord) FailedWebhooks() int { return r.count(DeliveryFailed) }

// DeliverySuccess reports whether every delivery succeeded: none is pending or failed. An event
// with no deliveries at all counts as delivered (there was nothing to fail), so the
// delivery_success filter's true and false answers split the events between them.
func (r *EventRecord) DeliverySuccess() bool {
	return r.PendingWebhooks() == 0 && r.FailedWebhooks() == 0
}

func (r *EventRecord) count(s DeliveryStatus) int {
	n := 0
	for _, t := range r.Targets {
		if t.Status == s {
			n++
		}
	}
	return n
}

// Status returns the status of the delivery, if it is one of this event's.
func (r *EventRecord) Status(delivery string) (DeliveryStatus, bool) {
	for _, t := range r.Targets {
		if t.Delivery == delivery {
			return t.Status, true
		}
	}
	return "", false
}
