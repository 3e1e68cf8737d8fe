package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/libs/eventtype"

	rental "rentalplatform/clients/go"
)

// The generated Go client (clients/go) drives a whole flow against the platform: a webhook
// endpoint, a payment agreement, a payment request collected, its events listed, and their
// delivery to the endpoint, signed. Its requests go through the contract's checking transport
// like every other of the suite.
func TestGoClientFlow(t *testing.T) {
	p := startWith(t, stackConfig{env: deliveryEnv("1s,2s,3s")})
	t.Cleanup(func() { p.noDeaths(t) })
	key := p.newKey(t, "acct_goclient", false)
	ctx := withTest(context.Background(), t)
	c, err := rental.NewClientWithResponses(p.GatewayURL, rental.WithHTTPClient(http.DefaultClient),
		rental.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	rx := receiver.New(t)

	// A webhook endpoint for the request's outcome and its charges.
	var events []rental.EnabledEvent
	for _, typ := range []string{eventtype.PaymentRequestSucceeded, eventtype.ChargeSucceeded} {
		var e rental.EnabledEvent
		if err := e.FromEventTypeName(rental.EventTypeName(typ)); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	idem := rental.IdempotencyKey("go-client-endpoint")
	ep, err := c.CreateWebhookEndpointWithResponse(ctx, &rental.CreateWebhookEndpointParams{IdempotencyKey: &idem},
		rental.CreateWebhookEndpointBody{Url: rx.URL() + "/hooks", EnabledEvents: events})
	if err != nil || ep.JSON200 == nil {
		t.Fatalf("create endpoint: %v %d %s", err, ep.StatusCode(), ep.Body)
	}
	if ep.JSON200.Status != rental.WebhookEndpointWithSecretStatusEnabled {
		t.Fatalf("endpoint: %+v", ep.JSON200)
	}
	// The same call again is a replay: the same endpoint, marked as such.
	again, err := c.CreateWebhookEndpointWithResponse(ctx, &rental.CreateWebhookEndpointParams{IdempotencyKey: &idem},
		rental.CreateWebhookEndpointBody{Url: rx.URL() + "/hooks", EnabledEvents: events})
	if err != nil || again.JSON200 == nil || again.JSON200.Id != ep.JSON200.Id || again.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %v %d %s", err, again.StatusCode(), again.Body)
	}

	// An agreement, a request against it, collected at once.
	var agreement rental.CreatePaymentAgreementJSONRequestBody
	if err := json.Unmarshal([]byte(`{"tenant":{"name":"Jane Doe","email":"jane@example.com"},
		"payment_methods":[{"type":"card","token":"tok_test_success","preferred":true}]}`), &agreement); err != nil {
		t.Fatal(err)
	}
	pa, err := c.CreatePaymentAgreementWithResponse(ctx, nil, agreement)
	if err != nil || pa.JSON200 == nil || pa.JSON200.Status != rental.PaymentAgreementStatusActive {
		t.Fatalf("create agreement: %v %d %s", err, pa.StatusCode(), pa.Body)
	}
	desc := "November rent"
	preq, err := c.CreatePaymentRequestWithResponse(ctx, nil, rental.PaymentRequestParams{
		PaymentAgreement: pa.JSON200.Id, Amount: 125000, Currency: "eur", Description: &desc})
	if err != nil || preq.JSON200 == nil || preq.JSON200.Status != rental.PaymentRequestStatusPending {
		t.Fatalf("create request: %v %d %s", err, preq.StatusCode(), preq.Body)
	}
	// A typed error: the envelope, its code and the parameter it names.
	bad, err := c.CreatePaymentRequestWithResponse(ctx, nil, rental.PaymentRequestParams{
		PaymentAgreement: pa.JSON200.Id, Amount: 0, Currency: "eur"})
	if err != nil || bad.JSON400 == nil || bad.JSON400.Error.Code != rental.ErrorCodeParameterInvalid || bad.JSON400.Error.Param == nil || *bad.JSON400.Error.Param != "amount" {
		t.Fatalf("amount 0: %v %d %s", err, bad.StatusCode(), bad.Body)
	}

	var got *rental.PaymentRequest
	for deadline := time.Now().Add(deliveryWait); ; time.Sleep(200 * time.Millisecond) {
		r, err := c.RetrievePaymentRequestWithResponse(ctx, rental.PaymentRequestID(preq.JSON200.Id), nil)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("retrieve: %v %d %s", err, r.StatusCode(), r.Body)
		}
		if got = r.JSON200; got.Status == rental.PaymentRequestStatusSucceeded || time.Now().After(deadline) {
			break
		}
	}
	if got.Status != rental.PaymentRequestStatusSucceeded || len(got.AttemptLog) != 1 || got.AttemptLog[0].Outcome != rental.ChargeOutcomeSucceeded {
		t.Fatalf("the request after collection: %+v", got)
	}
	charge := got.AttemptLog[0]

	// Its events, listed by type; and their deliveries to the endpoint, signed.
	types := []rental.EventTypeName{rental.EventTypeName(eventtype.PaymentRequestSucceeded), rental.EventTypeName(eventtype.ChargeSucceeded)}
	var succeeded, charged string
	for deadline := time.Now().Add(deliveryWait); succeeded == "" || charged == ""; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the events of the collection were not listed in time")
		}
		list, err := c.ListEventsWithResponse(ctx, &rental.ListEventsParams{Types: &types})
		if err != nil || list.JSON200 == nil {
			t.Fatalf("list events: %v %d %s", err, list.StatusCode(), list.Body)
		}
		for _, e := range list.JSON200.Data {
			switch b, _ := e.MarshalJSON(); {
			case eventAbout(t, b, eventtype.PaymentRequestSucceeded, got.Id):
				succeeded = eventID(t, b)
			case eventAbout(t, b, eventtype.ChargeSucceeded, charge.Id):
				ev, err := e.AsChargeEvent()
				if err != nil || ev.Data.Object.PaymentRequest != got.Id {
					t.Fatalf("charge.succeeded as a ChargeEvent: %v %+v", err, ev)
				}
				charged = eventID(t, b)
			}
		}
	}
	reqs := rx.WaitUntil(t, "/hooks", deliveryWait, "the collection's events",
		func(rs []receiver.Request) bool {
			return answeredAbout(eventtype.PaymentRequestSucceeded, got.Id)(rs) && answeredAbout(eventtype.ChargeSucceeded, charge.Id)(rs)
		})
	for _, q := range reqs {
		if err := verifier(t, ep.JSON200.Secret).Verify(q.Header, q.Body); err != nil {
			t.Fatalf("%s: %v", q.Event().Type, err)
		}
	}
	for deadline := time.Now().Add(deliveryWait); ; time.Sleep(200 * time.Millisecond) {
		d, err := c.ListEventDeliveriesWithResponse(ctx, rental.EventID(succeeded), nil)
		if err != nil || d.JSON200 == nil || len(d.JSON200.Data) != 1 {
			t.Fatalf("the event's deliveries: %v %d %s", err, d.StatusCode(), d.Body)
		}
		if dl := d.JSON200.Data[0]; dl.Status == rental.WebhookDeliveryStatusSucceeded {
			if dl.WebhookEndpoint == nil || *dl.WebhookEndpoint != ep.JSON200.Id || len(dl.Attempts) == 0 {
				t.Fatalf("delivery: %+v", dl)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery of %s did not succeed in time", succeeded)
		}
	}
}

// eventAbout reports whether an event (as JSON) has type typ and is about object id.
func eventAbout(t *testing.T, b []byte, typ, id string) bool {
	t.Helper()
	var e struct {
		Type string
		Data struct{ Object struct{ ID string } }
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e.Type == typ && e.Data.Object.ID == id
}

func eventID(t *testing.T, b []byte) string {
	t.Helper()
	var e struct{ ID string }
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}
