package domain

import (
	"testing"

	"rentalplatform/libs/events"
)

func TestEventRecordCounts(t *testing.T) {
	none := NewEventRecord(events.Event{ID: "evt_1"}, nil)
	if none.PendingWebhooks() != 0 || !none.DeliverySuccess() {
		t.Fatal("an event without deliveries counts as delivered")
	}
	r := NewEventRecord(events.Event{ID: "evt_1"}, []Target{
		{Delivery: "wd_1", Endpoint: "we_1", Status: DeliveryPending},
		{Delivery: "wd_2", Endpoint: "we_2", Status: DeliveryPending},
	})
	if r.Event.PendingWebhooks != 2 || r.DeliverySuccess() {
		t.Fatalf("two pending: %+v", r)
	}
	if !r.SetStatus("wd_1", DeliverySucceeded) || r.SetStatus("wd_1", DeliverySucceeded) || r.SetStatus("wd_9", DeliveryFailed) {
		t.Fatal("SetStatus reports changes wrongly")
	}
	r.SetStatus("wd_2", DeliveryFailed)
	if r.Event.PendingWebhooks != 0 || r.FailedWebhooks() != 1 || r.DeliverySuccess() {
		t.Fatalf("one failed: %+v", r)
	}
	r.SetStatus("wd_2", DeliverySucceeded)
	if !r.DeliverySuccess() {
		t.Fatal("all succeeded")
	}
	r.SetStatus("wd_2", DeliveryPending) // retried by hand
	if r.Event.PendingWebhooks != 1 || r.DeliverySuccess() {
		t.Fatal("a delivery retried by hand is pending again")
	}
}
