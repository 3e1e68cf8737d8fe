package main

import (
	"slices"
	"testing"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/ids"
)

// An event with its own destination (a verification session's webhook_url) is delivered there,
// signed with the destination's secret and retried like an endpoint's delivery, and not to the
// account's endpoints. Both the fan-out's own first attempt and the queued path.
func TestDeliveryToAnEventsDestination(t *testing.T) {
	t.Parallel()
	for _, inline := range []string{"200ms", "0"} {
		t.Run("WEBHOOKS_INLINE_WAIT="+inline, func(t *testing.T) {
			t.Parallel()
			s := start(t, "WEBHOOKS_INLINE_WAIT", inline)
			c := s.client(t)
			endpoint := newReceiver(t, always(200))
			c.createEndpoint(endpoint.url(), "*")
			// The destination fails twice, then answers.
			dest := newReceiver(t, func(n int, _ received) int {
				if n <= 2 {
					return 503
				}
				return 200
			})
			secret := ids.StdSecret("whsec_", 32)
			ev, err := eventstest.New(s.ids, time.Now(), eventstest.Change{
				Type: "verification_session.created", Account: c.account,
				Object:      map[string]any{"id": "vs_1", "object": "verification_session"},
				Destination: &events.Destination{URL: dest.url(), Secret: secret},
			})
			if err != nil {
				t.Fatal(err)
			}
			s.publish(t, ev)
			got := dest.waitFor(t, "verification_session.created", 3)
			for _, r := range got {
				if r.header.Get("webhook-id") != ev.ID || !verifySignature(secret, r) {
					t.Fatalf("a delivery to the destination is not signed with its secret: %v", r.header)
				}
				if _, shown := r.event["destination"]; shown {
					t.Fatalf("the destination is rendered: %s", r.body)
				}
			}
			var ds []map[string]any
			eventually(t, 10*time.Second, func() bool {
				ds = c.deliveries("/v1/events/" + ev.ID + "/deliveries")
				return len(ds) == 1 && ds[0]["status"] == "succeeded"
			}, "the destination's delivery to succeed")
			if ds[0]["webhook_endpoint"] != nil || !slices.Equal(attemptStatuses(ds[0]), []any{503.0, 503.0, 200.0}) {
				t.Fatalf("delivery %v", ds[0])
			}
			var e response
			eventually(t, 10*time.Second, func() bool {
				e = c.do("GET", "/v1/events/"+ev.ID, "").wantOK(t)
				return e.body["pending_webhooks"] == 0.0
			}, "the event to count its delivery as done")
			if _, shown := e.body["destination"]; shown {
				t.Fatalf("the events API shows the destination: %s", e.raw)
			}
			for _, r := range endpoint.all() {
				if r.eventType() == "verification_session.created" {
					t.Fatalf("the account's endpoint got an event meant for its destination: %s", r.body)
				}
			}

			// A retry by hand goes to the destination again.
			c.do("POST", "/v1/webhook_deliveries/"+ds[0]["id"].(string)+"/retry", "").wantOK(t)
			dest.waitFor(t, "verification_session.created", 4)
		})
	}
}
