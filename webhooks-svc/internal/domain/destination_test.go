package domain

import (
	"testing"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/ids"
)

func TestDestinationEndpoint(t *testing.T) {
	ev, err := eventstest.New(ids.NewGenerator(nil), time.Now(), eventstest.Change{Type: "verification_session.created",
		Account: "acct_a", Livemode: true, Object: map[string]string{"id": "vs_1"},
		Destination: &events.Destination{URL: "https://hooks.example.com/x", Secret: "whsec_c2VjcmV0"}})
	if err != nil {
		t.Fatal(err)
	}
	ep, ok := DestinationEndpoint(ev)
	if !ok || !ep.IsDestination() || ep.URL() != "https://hooks.example.com/x" || ep.Status() != StatusEnabled ||
		ep.Account() != "acct_a" || !ep.Livemode() || ep.APIVersion() != ev.APIVersion {
		t.Fatalf("endpoint %+v", ep.State())
	}
	if s := ep.SigningSecrets(time.Now()); len(s) != 1 || s[0] != "whsec_c2VjcmV0" {
		t.Fatalf("signing secrets %v", s)
	}
	ev.Destination = nil
	if _, ok := DestinationEndpoint(ev); ok {
		t.Fatal("an event without a destination has one")
	}
	d := NewDelivery(NewDeliveryParams{ID: "wd_1", Event: ev.ID, Account: "acct_a", Created: time.Now()})
	if !d.ToDestination() || NewDelivery(NewDeliveryParams{ID: "wd_2", Endpoint: "we_1", Created: time.Now()}).ToDestination() {
		t.Fatal("ToDestination")
	}
}
