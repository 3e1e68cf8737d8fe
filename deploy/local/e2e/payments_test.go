package e2e

// Payments end to end (issue 11 §4): payment agreements and payment requests through the
// gateway with real API keys on one stack, the collection engine driven by the test-mode
// simulated processor and the advance test helper, the events a webhook endpoint receives
// (TLS receiver on 127.0.0.1, signatures verified), and a Redis flush between attempts.
//
// One stack for everything, its Redis behind a fault proxy: the subtests of "api" run in
// parallel, each with its own account (lists are per account, so "nothing created" is
// checkable); then, alone, the cancel of a pending request (Redis cut, so the first attempt
// cannot be queued) and the Redis flush, because both take Redis away from every program.

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/libs/eventtype"
)

// paymentWait bounds how long the engine may take to run an attempt that is due now (asynq
// polling, the embedded store, a loaded 2-CPU machine).
const paymentWait = 30 * time.Second

// Seconds from a failed attempt to the next (issue 11 §3): 24 h after attempt 1, 72 h after
// attempt 2.
const (
	retryAfterAttempt1 = 24 * 3600
	retryAfterAttempt2 = 72 * 3600
)

// paymentEventTypes are every payment_request.*, payment_agreement.* and charge.* type
// payments emits (endpoints take exact types or "*", no family patterns).
var paymentEventTypes = []string{
	eventtype.PaymentAgreementCreated, eventtype.PaymentAgreementUpdated, eventtype.PaymentAgreementCancelled,
	eventtype.PaymentRequestCreated, eventtype.PaymentRequestProcessing, eventtype.PaymentRequestRetrying,
	eventtype.PaymentRequestSucceeded, eventtype.PaymentRequestFailed, eventtype.PaymentRequestCancelled,
	eventtype.ChargeSucceeded, eventtype.ChargeFailed,
}

func TestPayments(t *testing.T) {
	t.Parallel()
	// Redis behind a proxy the test can cut (the data stays, the network goes): the only
	// deterministic way to keep a request pending is to keep its first attempt from being
	// queued. So first attempts are queued here, as payments-svc does when its own runners are
	// off or full (PAYMENTS_INLINE_CONCURRENCY=0), rather than run by them at once; every other
	// test of the suite (the payments drills among them) runs them inline, the default.
	proxy, redisURL := redisBehindProxy(t)
	env := deliveryEnv("1s,2s,3s")
	env["PAYMENTS_INLINE_CONCURRENCY"] = "0"
	p := startWith(t, stackConfig{env: env, redisURL: redisURL})
	t.Cleanup(func() { p.noDeaths(t) })

	t.Run("api", func(t *testing.T) {
		t.Run("success first time", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_paysuccess", false)
			pa := p.createAgreement(t, key, "tok_test_success")
			if pa["status"] != "active" || !strings.HasPrefix(str(pa["id"]), "pa_") || pa["livemode"] != false {
				t.Fatalf("agreement: %v", pa)
			}
			pm := methodAt(t, pa, 0)
			if !strings.HasPrefix(str(pm["id"]), "pm_") || pm["status"] != "active" || pm["preferred"] != true || pm["last4"] != "cess" {
				t.Fatalf("payment method: %v", pm)
			}
			if _, ok := pm["token"]; ok {
				t.Errorf("the agreement shows the raw token: %v", pm)
			}

			pr := p.createPaymentRequest(t, key, str(pa["id"]), 125000, "eur")
			if pr["object"] != "payment_request" || !strings.HasPrefix(str(pr["id"]), "preq_") || pr["status"] != "pending" ||
				num(pr["attempts"]) != 0 || pr["payment_method_used"] != nil || pr["next_retry_at"] != nil ||
				pr["failure_reason"] != nil || pr["payment_agreement"] != pa["id"] || num(pr["amount"]) != 125000 {
				t.Fatalf("created request: %v", pr)
			}
			id := str(pr["id"])
			done := p.waitRequest(t, key, id, "succeeded", statusIs("succeeded"))
			log := attemptLog(done)
			if done["payment_method_used"] != pm["id"] || num(done["attempts"]) != 1 || done["next_retry_at"] != nil ||
				done["retry_stop_reason"] != "succeeded" || done["failure_reason"] != nil || len(log) != 1 ||
				log[0]["outcome"] != "succeeded" || log[0]["payment_method"] != pm["id"] || num(log[0]["attempt"]) != 1 {
				t.Fatalf("succeeded request: %v", done)
			}
			listed := listAll(t, key, p.GatewayURL+"/v1/payment_requests?status=succeeded&payment_agreement="+str(pa["id"]))
			if len(listed) != 1 || listed[0]["id"] != id {
				t.Errorf("list status=succeeded: %v", listed)
			}
			if l := listAll(t, key, p.GatewayURL+"/v1/payment_requests?status=pending"); len(l) != 0 {
				t.Errorf("list status=pending: %v", l)
			}
			// Another account and the other mode do not see it.
			other := p.newKey(t, "acct_payother", false)
			if r := call(t, "GET", p.GatewayURL+"/v1/payment_requests/"+id, other, nil); r.Status != 404 {
				t.Errorf("another account reads the request: %d %s", r.Status, r.Raw)
			}
			live := p.newKey(t, "acct_paysuccess", true)
			if r := call(t, "GET", p.GatewayURL+"/v1/payment_requests/"+id, live, nil); r.Status != 404 {
				t.Errorf("a live key reads a test request: %d %s", r.Status, r.Raw)
			}
		})

		t.Run("fallback to the second method", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_payfallback", false)
			pa := p.createAgreement(t, key, "tok_test_declined", "tok_test_success")
			first, second := methodAt(t, pa, 0), methodAt(t, pa, 1)
			if first["preferred"] != true || second["preferred"] != false {
				t.Fatalf("methods not in charge order: %v", pa["payment_methods"])
			}
			id := str(p.createPaymentRequest(t, key, str(pa["id"]), 90000, "gbp")["id"])
			done := p.waitRequest(t, key, id, "succeeded", statusIs("succeeded"))
			log := attemptLog(done)
			if done["payment_method_used"] != second["id"] || num(done["attempts"]) != 1 || done["retry_stop_reason"] != "succeeded" {
				t.Fatalf("payment_method_used %v, want the second method %v: %v", done["payment_method_used"], second["id"], done)
			}
			if len(log) != 2 || log[0]["payment_method"] != first["id"] || log[0]["outcome"] != "failed" || log[0]["failure_code"] != "declined" ||
				log[1]["payment_method"] != second["id"] || log[1]["outcome"] != "succeeded" || log[1]["failure_code"] != nil ||
				num(log[0]["attempt"]) != 1 || num(log[1]["attempt"]) != 1 {
				t.Fatalf("attempt_log: %v", done["attempt_log"])
			}
			// The hard decline fails the first method on the agreement shortly after.
			u := p.GatewayURL + "/v1/payment_agreements/" + str(pa["id"])
			deadline := time.Now().Add(paymentWait)
			for {
				res := call(t, "GET", u, key, nil)
				if res.Status != 200 {
					t.Fatalf("GET agreement: %d %s", res.Status, res.Raw)
				}
				m0, m1 := methodAt(t, res.Body, 0), methodAt(t, res.Body, 1)
				if m0["status"] == "failed" {
					if m0["id"] != first["id"] || m0["failure_code"] != "declined" || m1["status"] != "active" || res.Body["status"] != "active" {
						t.Fatalf("agreement after the decline: %s", res.Raw)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the declined method is not failed within %s: %s", paymentWait, res.Raw)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})

		t.Run("succeed from attempt 2 via advance", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_payfrom2", false)
			pa := p.createAgreement(t, key, "tok_test_succeed_from_attempt_2")
			id := str(p.createPaymentRequest(t, key, str(pa["id"]), 5000, "eur")["id"])
			waiting := p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled)
			checkRetrying(t, waiting, 1, retryAfterAttempt1)

			adv := p.advance(t, key, id)
			if adv.Status != 200 {
				t.Fatalf("advance: %d %s", adv.Status, adv.Raw)
			}
			b := adv.Body
			log := attemptLog(b)
			if b["status"] != "succeeded" || num(b["attempts"]) != 2 || b["next_retry_at"] != nil || b["retry_stop_reason"] != "succeeded" ||
				b["payment_method_used"] != methodAt(t, pa, 0)["id"] || b["failure_reason"] != nil || len(log) != 2 ||
				num(log[1]["attempt"]) != 2 || log[1]["outcome"] != "succeeded" {
				t.Fatalf("advance answered %s, want the request succeeded at attempt 2", adv.Raw)
			}
			if got := p.getRequest(t, key, id); got["status"] != "succeeded" || num(got["attempts"]) != 2 {
				t.Fatalf("GET after advance: %v", got)
			}
			again := p.advance(t, key, id)
			if again.Status != 400 || again.errCode() != "invalid_state" {
				t.Errorf("advance with nothing scheduled: %d %s", again.Status, again.Raw)
			}
		})

		t.Run("succeed from attempt 3 via advance", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_payfrom3", false)
			pa := p.createAgreement(t, key, "tok_test_succeed_from_attempt_3")
			id := str(p.createPaymentRequest(t, key, str(pa["id"]), 7000, "usd")["id"])
			checkRetrying(t, p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled), 1, retryAfterAttempt1)

			adv := p.advance(t, key, id)
			if adv.Status != 200 {
				t.Fatalf("advance 1: %d %s", adv.Status, adv.Raw)
			}
			checkRetrying(t, adv.Body, 2, retryAfterAttempt2)
			if got := p.getRequest(t, key, id); got["next_retry_at"] != adv.Body["next_retry_at"] || num(got["attempts"]) != 2 {
				t.Errorf("GET after advance 1: %v, advance answered %s", got, adv.Raw)
			}

			adv = p.advance(t, key, id)
			if adv.Status != 200 {
				t.Fatalf("advance 2: %d %s", adv.Status, adv.Raw)
			}
			b := adv.Body
			log := attemptLog(b)
			if b["status"] != "succeeded" || num(b["attempts"]) != 3 || b["next_retry_at"] != nil || b["retry_stop_reason"] != "succeeded" ||
				b["payment_method_used"] != methodAt(t, pa, 0)["id"] || len(log) != 3 || log[2]["outcome"] != "succeeded" ||
				log[0]["failure_code"] != "insufficient_funds" || log[1]["failure_code"] != "insufficient_funds" {
				t.Fatalf("advance 2 answered %s, want the request succeeded at attempt 3", adv.Raw)
			}
		})

		t.Run("all attempts fail, then cancel is refused", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_payallfail", false)
			pa := p.createAgreement(t, key, "tok_test_insufficient_funds")
			id := str(p.createPaymentRequest(t, key, str(pa["id"]), 8000, "eur")["id"])
			checkRetrying(t, p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled), 1, retryAfterAttempt1)
			adv := p.advance(t, key, id)
			if adv.Status != 200 {
				t.Fatalf("advance 1: %d %s", adv.Status, adv.Raw)
			}
			checkRetrying(t, adv.Body, 2, retryAfterAttempt2)
			adv = p.advance(t, key, id)
			if adv.Status != 200 {
				t.Fatalf("advance 2: %d %s", adv.Status, adv.Raw)
			}
			b := adv.Body
			if b["status"] != "failed" || b["failure_reason"] != "insufficient_funds" || b["retry_stop_reason"] != "attempts_exhausted" ||
				num(b["attempts"]) != 3 || b["next_retry_at"] != nil || b["payment_method_used"] != nil || len(attemptLog(b)) != 3 {
				t.Fatalf("after attempt 3: %s", adv.Raw)
			}
			failed := p.getRequest(t, key, id)

			// Cancel of a failed request: 400 invalid_state, unchanged.
			res := call(t, "POST", p.GatewayURL+"/v1/payment_requests/"+id+"/cancel", key, nil)
			if res.Status != 400 || res.errCode() != "invalid_state" {
				t.Errorf("cancel of a failed request: %d %s", res.Status, res.Raw)
			}
			if res := p.advance(t, key, id); res.Status != 400 || res.errCode() != "invalid_state" {
				t.Errorf("advance of a failed request: %d %s", res.Status, res.Raw)
			}
			if got := p.getRequest(t, key, id); got["status"] != "failed" || fmt.Sprint(got) != fmt.Sprint(failed) {
				t.Errorf("the refused cancel changed the request:\n%v\n%v", failed, got)
			}
		})

		t.Run("cancel while waiting for a retry, again, and of a succeeded request", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_paycancel", false)
			pa := p.createAgreement(t, key, "tok_test_succeed_from_attempt_3")
			id := str(p.createPaymentRequest(t, key, str(pa["id"]), 3000, "eur")["id"])
			p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled)

			res := call(t, "POST", p.GatewayURL+"/v1/payment_requests/"+id+"/cancel", key, nil)
			if res.Status != 200 {
				t.Fatalf("cancel: %d %s", res.Status, res.Raw)
			}
			b := res.Body
			if b["status"] != "cancelled" || b["retry_stop_reason"] != "cancelled" || b["next_retry_at"] != nil ||
				b["cancelled_at"] == nil || num(b["attempts"]) != 1 || b["payment_method_used"] != nil {
				t.Fatalf("cancelled: %s", res.Raw)
			}
			again := call(t, "POST", p.GatewayURL+"/v1/payment_requests/"+id+"/cancel", key, nil)
			if again.Status != 200 || string(again.Raw) != string(res.Raw) {
				t.Errorf("second cancel: %d\n%s\nfirst:\n%s", again.Status, again.Raw, res.Raw)
			}
			if adv := p.advance(t, key, id); adv.Status != 400 || adv.errCode() != "invalid_state" {
				t.Errorf("advance of a cancelled request: %d %s", adv.Status, adv.Raw)
			}
			if got := p.getRequest(t, key, id); got["status"] != "cancelled" || num(got["attempts"]) != 1 {
				t.Errorf("GET after cancel: %v", got)
			}

			ok := p.createAgreement(t, key, "tok_test_success")
			okID := str(p.createPaymentRequest(t, key, str(ok["id"]), 3000, "eur")["id"])
			p.waitRequest(t, key, okID, "succeeded", statusIs("succeeded"))
			res = call(t, "POST", p.GatewayURL+"/v1/payment_requests/"+okID+"/cancel", key, nil)
			if res.Status != 400 || res.errCode() != "invalid_state" {
				t.Errorf("cancel of a succeeded request: %d %s", res.Status, res.Raw)
			}
			if got := p.getRequest(t, key, okID); got["status"] != "succeeded" || got["cancelled_at"] != nil {
				t.Errorf("the refused cancel changed the request: %v", got)
			}
			if res := call(t, "POST", p.GatewayURL+"/v1/payment_requests/preq_01kaj0000000000000000000000/cancel", key, nil); res.Status != 404 {
				t.Errorf("cancel of an unknown request: %d %s", res.Status, res.Raw)
			}
		})

		t.Run("bulk is all or nothing", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_paybulk", false)
			pa := str(p.createAgreement(t, key, "tok_test_success")["id"])
			elem := func(amount int, currency string) map[string]any {
				return map[string]any{"payment_agreement": pa, "amount": amount, "currency": currency, "description": "rent"}
			}
			bulkURL := p.GatewayURL + "/v1/payment_requests/bulk"
			for _, tc := range []struct {
				name        string
				body        any
				code, param string
			}{
				{"a zero amount", map[string]any{"requests": []any{elem(100, "eur"), elem(0, "eur"), elem(300, "eur")}}, "parameter_invalid", "requests[1].amount"},
				{"a missing currency", map[string]any{"requests": []any{elem(100, "eur"), elem(200, "eur"),
					map[string]any{"payment_agreement": pa, "amount": 5}}}, "parameter_missing", "requests[2].currency"},
				{"an unknown parameter", map[string]any{"requests": []any{map[string]any{"payment_agreement": pa, "amount": 5, "currency": "eur", "colour": "red"}}},
					"parameter_unknown", "requests[0].colour"},
				{"an unknown agreement", map[string]any{"requests": []any{elem(100, "eur"),
					map[string]any{"payment_agreement": "pa_01kaj0000000000000000000000", "amount": 5, "currency": "eur"}}}, "resource_missing", "requests[1].payment_agreement"},
				{"no element", map[string]any{"requests": []any{}}, "", "requests"},
				{"101 elements", map[string]any{"requests": repeat(elem(100, "eur"), 101)}, "", "requests"},
			} {
				res := call(t, "POST", bulkURL, key, tc.body)
				if res.Status != 400 || res.errParam() != tc.param || (tc.code != "" && res.errCode() != tc.code) {
					t.Errorf("bulk with %s: %d %s, want 400 %s naming %s", tc.name, res.Status, res.Raw, tc.code, tc.param)
				}
			}
			if l := listAll(t, key, p.GatewayURL+"/v1/payment_requests"); len(l) != 0 {
				t.Fatalf("refused bulks created %d requests: %v", len(l), l)
			}

			res := call(t, "POST", bulkURL, key, map[string]any{"requests": []any{elem(101, "eur"), elem(102, "gbp"), elem(103, "usd")}})
			if res.Status != 200 {
				t.Fatalf("valid bulk: %d %s", res.Status, res.Raw)
			}
			data, _ := res.Body["data"].([]any)
			if res.Body["object"] != "list" || num(res.Body["total_created"]) != 3 || res.Body["url"] != "/v1/payment_requests/bulk" || len(data) != 3 {
				t.Fatalf("valid bulk answered %s", res.Raw)
			}
			var created []string
			for i, d := range data {
				m, _ := d.(map[string]any)
				if !strings.HasPrefix(str(m["id"]), "preq_") || num(m["amount"]) != float64(101+i) || m["status"] != "pending" || m["payment_agreement"] != pa {
					t.Errorf("bulk data[%d]: %v", i, m)
				}
				created = append(created, str(m["id"]))
			}
			for _, id := range created {
				p.waitRequest(t, key, id, "succeeded", statusIs("succeeded"))
			}
			var listed []string
			for _, m := range listAll(t, key, p.GatewayURL+"/v1/payment_requests?status=succeeded") {
				listed = append(listed, str(m["id"]))
			}
			slices.Sort(listed)
			slices.Sort(created)
			if !slices.Equal(listed, created) {
				t.Errorf("listed %v, created %v", listed, created)
			}
		})

		t.Run("agreement cancel cancels its waiting requests", func(t *testing.T) {
			t.Parallel()
			key := p.newKey(t, "acct_payagcancel", false)
			pa := str(p.createAgreement(t, key, "tok_test_insufficient_funds")["id"])
			var reqs []string
			for i := range 2 {
				reqs = append(reqs, str(p.createPaymentRequest(t, key, pa, 1000+i, "eur")["id"]))
			}
			for _, id := range reqs {
				p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled)
			}
			cancelled := call(t, "POST", p.GatewayURL+"/v1/payment_agreements/"+pa+"/cancel", key, nil)
			if cancelled.Status != 200 || cancelled.Body["status"] != "cancelled" || cancelled.Body["cancelled_at"] == nil {
				t.Fatalf("cancel agreement: %d %s", cancelled.Status, cancelled.Raw)
			}
			for _, id := range reqs {
				b := p.getRequest(t, key, id)
				if b["status"] != "cancelled" || b["retry_stop_reason"] != "agreement_cancelled" || b["next_retry_at"] != nil || num(b["attempts"]) != 1 {
					t.Errorf("request %s of the cancelled agreement: %v", id, b)
				}
			}
			res := call(t, "POST", p.GatewayURL+"/v1/payment_requests", key, map[string]any{"payment_agreement": pa, "amount": 100, "currency": "eur"})
			if res.Status != 400 || res.errCode() != "agreement_not_active" || res.errParam() != "payment_agreement" {
				t.Errorf("request against a cancelled agreement: %d %s", res.Status, res.Raw)
			}
			res = call(t, "POST", p.GatewayURL+"/v1/payment_requests/bulk", key,
				map[string]any{"requests": []any{map[string]any{"payment_agreement": pa, "amount": 100, "currency": "eur"}}})
			if res.Status != 400 || res.errCode() != "agreement_not_active" || res.errParam() != "requests[0].payment_agreement" {
				t.Errorf("bulk against a cancelled agreement: %d %s", res.Status, res.Raw)
			}
			if l := listAll(t, key, p.GatewayURL+"/v1/payment_requests"); len(l) != 2 {
				t.Errorf("%d requests listed, want the 2 created before the cancel", len(l))
			}
			again := call(t, "POST", p.GatewayURL+"/v1/payment_agreements/"+pa+"/cancel", key, nil)
			if again.Status != 200 || again.Body["status"] != "cancelled" || again.Body["cancelled_at"] != cancelled.Body["cancelled_at"] {
				t.Errorf("second agreement cancel: %d %s", again.Status, again.Raw)
			}
			listed := listAll(t, key, p.GatewayURL+"/v1/payment_agreements?status=cancelled")
			if len(listed) != 1 || listed[0]["id"] != pa {
				t.Errorf("list status=cancelled: %v", listed)
			}
		})

		t.Run("live key", func(t *testing.T) {
			t.Parallel()
			live := p.newKey(t, "acct_paylive", true)
			res := call(t, "POST", p.GatewayURL+"/v1/payment_agreements", live, agreementParams("tok_test_success"))
			if res.Status != 400 || res.errCode() != "processor_not_configured" {
				t.Errorf("live agreement create: %d %s", res.Status, res.Raw)
			}
			if l := listAll(t, live, p.GatewayURL+"/v1/payment_agreements"); len(l) != 0 {
				t.Errorf("a refused live create stored an agreement: %v", l)
			}
			// advance is a test helper: 404 with a live key, whether or not the request exists
			// (in test mode).
			test := p.newKey(t, "acct_paylive", false)
			pa := str(p.createAgreement(t, test, "tok_test_insufficient_funds")["id"])
			id := str(p.createPaymentRequest(t, test, pa, 100, "eur")["id"])
			p.waitRequest(t, test, id, "waiting for attempt 2", retryScheduled)
			for _, target := range []string{id, "preq_01kaj0000000000000000000000"} {
				if res := p.advance(t, live, target); res.Status != 404 {
					t.Errorf("advance %s with a live key: %d %s", target, res.Status, res.Raw)
				}
			}
			if b := p.getRequest(t, test, id); num(b["attempts"]) != 1 || b["next_retry_at"] == nil {
				t.Errorf("a refused live advance ran the attempt: %v", b)
			}
		})

		t.Run("events received by a webhook endpoint", func(t *testing.T) {
			t.Parallel()
			rx := receiver.New(t)
			key := p.newKey(t, "acct_payevents", false)
			_, secret := p.createEndpoint(t, key, rx.URL()+"/payments", paymentEventTypes...)
			pa := p.createAgreement(t, key, "tok_test_succeed_from_attempt_2")
			paID := str(pa["id"])
			id := str(p.createPaymentRequest(t, key, paID, 12500, "eur")["id"])
			waiting := p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled)
			adv := p.advance(t, key, id)
			if adv.Status != 200 || adv.Body["status"] != "succeeded" {
				t.Fatalf("advance: %d %s", adv.Status, adv.Raw)
			}
			// The request's two charges: attempt 1's failed, attempt 2's succeeded.
			charges := attemptLog(adv.Body)
			if len(charges) != 2 {
				t.Fatalf("advance answered %s, want two charges in attempt_log", adv.Raw)
			}
			failedCharge, succeededCharge := str(charges[0]["id"]), str(charges[1]["id"])
			for i, c := range charges {
				if !strings.HasPrefix(str(c["id"]), "ch_") || c["object"] != "charge" || c["payment_request"] != id ||
					c["payment_agreement"] != paID || num(c["amount"]) != 12500 || c["currency"] != "eur" || c["livemode"] != false ||
					num(c["attempt"]) != float64(i+1) || c["payment_method"] != methodAt(t, pa, 0)["id"] {
					t.Errorf("attempt_log[%d] is not the charge of attempt %d: %v", i, i+1, c)
				}
			}
			if charges[0]["outcome"] != "failed" || charges[0]["failure_code"] != "insufficient_funds" ||
				charges[1]["outcome"] != "succeeded" || charges[1]["failure_code"] != nil || failedCharge == succeededCharge {
				t.Errorf("charges: %v", charges)
			}

			want := []string{eventtype.PaymentAgreementCreated, eventtype.PaymentRequestCreated, eventtype.PaymentRequestProcessing,
				eventtype.ChargeFailed, eventtype.PaymentRequestRetrying, eventtype.ChargeSucceeded, eventtype.PaymentRequestSucceeded}
			reqs := rx.WaitUntil(t, "/payments", deliveryWait, "the seven events of "+id, func(r []receiver.Request) bool {
				return hasAbout(eventtype.PaymentAgreementCreated, paID, 1)(r) && hasAbout(eventtype.PaymentRequestCreated, id, 1)(r) &&
					hasAbout(eventtype.PaymentRequestProcessing, id, 1)(r) && hasAbout(eventtype.ChargeFailed, failedCharge, 1)(r) &&
					hasAbout(eventtype.PaymentRequestRetrying, id, 1)(r) && hasAbout(eventtype.ChargeSucceeded, succeededCharge, 1)(r) &&
					hasAbout(eventtype.PaymentRequestSucceeded, id, 1)(r)
			})
			ours := func(object string) bool {
				return object == id || object == paID || object == failedCharge || object == succeededCharge
			}
			time.Sleep(time.Second) // anything unexpected would arrive with the rest

			v := verifier(t, secret)
			byID := map[string]receiver.Event{}
			for _, q := range rx.Requests("/payments") {
				if err := v.Verify(q.Header, q.Body); err != nil {
					t.Errorf("delivery %s does not verify: %v", q.ID(), err)
				}
				e := q.Event()
				if q.ID() != e.ID || e.Livemode || e.Object != "event" {
					t.Errorf("delivery: webhook-id %q, event %+v", q.ID(), e)
				}
				if ours(e.ObjectID()) {
					byID[e.ID] = e
				}
			}
			var got []receiver.Event
			for _, e := range byID {
				got = append(got, e)
			}
			// Ordered by created, then by id (time-ordered ids break ties within a second).
			slices.SortFunc(got, func(a, b receiver.Event) int {
				if a.Created != b.Created {
					return int(a.Created - b.Created)
				}
				return strings.Compare(a.ID, b.ID)
			})
			var types []string
			for i, e := range got {
				types = append(types, e.Type)
				if i > 0 && e.ID <= got[i-1].ID {
					t.Errorf("event %s (%s) created at %d has an id before %s (%s) created at %d", e.ID, e.Type, e.Created, got[i-1].ID, got[i-1].Type, got[i-1].Created)
				}
			}
			if !slices.Equal(types, want) {
				t.Fatalf("events received, in order: %v\nwant %v\n%s", types, want, receiver.Summary(reqs))
			}
			objectOf := func(typ string) map[string]any {
				for _, e := range got {
					if e.Type == typ {
						return e.Data.Object
					}
				}
				return nil
			}
			if o := objectOf(eventtype.PaymentRequestCreated); o["status"] != "pending" || num(o["attempts"]) != 0 {
				t.Errorf("created event's object: %v", o)
			}
			if o := objectOf(eventtype.PaymentRequestProcessing); o["status"] != "processing" {
				t.Errorf("processing event's object: %v", o)
			}
			if o := objectOf(eventtype.PaymentRequestRetrying); o["status"] != "processing" || num(o["attempts"]) != 1 || o["next_retry_at"] != waiting["next_retry_at"] {
				t.Errorf("retrying event's object: %v (the request showed next_retry_at %v)", o, waiting["next_retry_at"])
			}
			if o := objectOf(eventtype.PaymentRequestSucceeded); o["status"] != "succeeded" || num(o["attempts"]) != 2 ||
				o["payment_method_used"] != methodAt(t, pa, 0)["id"] {
				t.Errorf("succeeded event's object: %v", o)
			}
			// A charge event's object is the charge as attempt_log shows it.
			if o := objectOf(eventtype.ChargeFailed); fmt.Sprint(o) != fmt.Sprint(charges[0]) {
				t.Errorf("charge.failed event's object: %v\nattempt_log[0]: %v", o, charges[0])
			}
			if o := objectOf(eventtype.ChargeSucceeded); fmt.Sprint(o) != fmt.Sprint(charges[1]) {
				t.Errorf("charge.succeeded event's object: %v\nattempt_log[1]: %v", o, charges[1])
			}

			// The event log (webhooks-svc's store) lists the same events, newest first.
			var listed []string
			for _, e := range listAll(t, key, p.GatewayURL+"/v1/events") {
				if ours(objectIDOf(e)) {
					listed = append(listed, str(e["type"]))
				}
			}
			slices.Reverse(listed)
			if !slices.Equal(listed, want) {
				t.Errorf("GET /v1/events lists %v (oldest first), want %v", listed, want)
			}
		})
	})

	// After the parallel subtests, alone: with Redis unreachable the first attempt of a new
	// request cannot be queued, so the request stays pending and its cancel is deterministic.
	var pendingCancelled string
	var pendingKey string
	t.Run("cancel of a pending request", func(t *testing.T) {
		key := p.newKey(t, "acct_paypending", false)
		pa := str(p.createAgreement(t, key, "tok_test_success")["id"])
		proxy.Cut()
		defer func() {
			if err := proxy.Restore(); err != nil {
				t.Fatal(err)
			}
		}()
		start := time.Now()
		pr := p.createPaymentRequest(t, key, pa, 2500, "eur")
		id := str(pr["id"])
		t.Logf("created %s with Redis unreachable in %s", id, time.Since(start).Round(time.Millisecond))
		if b := p.getRequest(t, key, id); b["status"] != "pending" || num(b["attempts"]) != 0 {
			t.Fatalf("with its first attempt not queued: %v", b)
		}
		res := call(t, "POST", p.GatewayURL+"/v1/payment_requests/"+id+"/cancel", key, nil)
		b := res.Body
		if res.Status != 200 || b["status"] != "cancelled" || b["retry_stop_reason"] != "cancelled" || num(b["attempts"]) != 0 ||
			b["next_retry_at"] != nil || b["cancelled_at"] == nil || len(attemptLog(b)) != 0 || b["payment_method_used"] != nil {
			t.Fatalf("cancel of a pending request: %d %s", res.Status, res.Raw)
		}
		if err := proxy.Restore(); err != nil {
			t.Fatal(err)
		}
		// Its events were kept in the outbox and are relayed once Redis is back.
		p.waitEvent(t, key, eventtype.PaymentRequestCancelled, id, deliveryWait)
		if b := p.getRequest(t, key, id); b["status"] != "cancelled" || num(b["attempts"]) != 0 {
			t.Fatalf("after Redis came back: %v", b)
		}
		pendingCancelled, pendingKey = id, key
	})

	// After every other subtest: FLUSHDB wipes the queues (and the gateway's keys) of every
	// program of the stack. The attempt's truth is in MongoDB, so advance still runs it.
	t.Run("redis flush between attempts", func(t *testing.T) {
		key := p.newKey(t, "acct_payflush", false)
		pa := p.createAgreement(t, key, "tok_test_succeed_from_attempt_2")
		id := str(p.createPaymentRequest(t, key, str(pa["id"]), 4200, "eur")["id"])
		checkRetrying(t, p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled), 1, retryAfterAttempt1)

		opt, err := redis.ParseURL(p.RedisURL)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		scheduled, err := rdb.ZCard(ctx, "asynq:{payments}:scheduled").Result()
		if err != nil {
			t.Fatalf("ZCARD of the payments queue's scheduled set: %v", err)
		}
		if scheduled == 0 {
			t.Errorf("no task in asynq:{payments}:scheduled before the flush")
		}
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatalf("FLUSHDB: %v", err)
		}
		t.Logf("flushed Redis (%d scheduled payment attempts were held)", scheduled)

		// Keys live in MongoDB: still valid.
		if b := p.getRequest(t, key, id); b["status"] != "processing" || num(b["attempts"]) != 1 || b["next_retry_at"] == nil {
			t.Fatalf("after the flush: %v", b)
		}
		adv := p.advance(t, key, id)
		if adv.Status != 200 {
			t.Fatalf("advance after the flush: %d %s", adv.Status, adv.Raw)
		}
		b := adv.Body
		if b["status"] != "succeeded" || num(b["attempts"]) != 2 || b["retry_stop_reason"] != "succeeded" || b["next_retry_at"] != nil ||
			len(attemptLog(b)) != 2 {
			t.Fatalf("advance after the flush answered %s, want succeeded at attempt 2", adv.Raw)
		}
		// And the event of the outcome still reaches the event log.
		p.waitEvent(t, key, eventtype.PaymentRequestSucceeded, id, deliveryWait)
		// The request cancelled while pending was never charged, flush or not.
		if pendingCancelled != "" {
			if b := p.getRequest(t, pendingKey, pendingCancelled); b["status"] != "cancelled" || num(b["attempts"]) != 0 {
				t.Errorf("the request cancelled while pending: %v", b)
			}
		}
	})
}

// agreementParams is an agreement body with one card method per token, the first preferred.
func agreementParams(tokens ...string) map[string]any {
	var methods []any
	for i, tok := range tokens {
		methods = append(methods, map[string]any{"type": "card", "token": tok, "preferred": i == 0})
	}
	return map[string]any{
		"tenant":          map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"},
		"payment_methods": methods,
	}
}

func (p *platform) createAgreement(t *testing.T, key string, tokens ...string) map[string]any {
	t.Helper()
	res := call(t, "POST", p.GatewayURL+"/v1/payment_agreements", key, agreementParams(tokens...))
	if res.Status != 200 || !strings.HasPrefix(str(res.Body["id"]), "pa_") {
		t.Fatalf("create agreement %v: %d %s", tokens, res.Status, res.Raw)
	}
	return res.Body
}

func (p *platform) createPaymentRequest(t *testing.T, key, agreement string, amount int, currency string) map[string]any {
	t.Helper()
	res := call(t, "POST", p.GatewayURL+"/v1/payment_requests", key,
		map[string]any{"payment_agreement": agreement, "amount": amount, "currency": currency, "description": "rent"})
	if res.Status != 200 || !strings.HasPrefix(str(res.Body["id"]), "preq_") {
		t.Fatalf("create payment request: %d %s", res.Status, res.Raw)
	}
	return res.Body
}

func (p *platform) getRequest(t *testing.T, key, id string) map[string]any {
	t.Helper()
	res := call(t, "GET", p.GatewayURL+"/v1/payment_requests/"+id, key, nil)
	if res.Status != 200 {
		t.Fatalf("GET %s: %d %s", id, res.Status, res.Raw)
	}
	return res.Body
}

func (p *platform) advance(t *testing.T, key, id string) response {
	t.Helper()
	return call(t, "POST", p.GatewayURL+"/v1/test_helpers/payment_requests/"+url.PathEscape(id)+"/advance", key, nil)
}

// waitRequest polls the request until cond holds, and returns it.
func (p *platform) waitRequest(t *testing.T, key, id, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(paymentWait)
	for {
		b := p.getRequest(t, key, id)
		if cond(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("payment request %s not %s within %s: %v", id, what, paymentWait, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// retryScheduled: an attempt failed and the next is scheduled.
func retryScheduled(b map[string]any) bool { return b["next_retry_at"] != nil }

// checkRetrying checks a request waiting for attempt n+1 after attempt n failed: next_retry_at
// is exactly delay seconds after the last failure of attempt n.
func checkRetrying(t *testing.T, b map[string]any, n int, delay int64) {
	t.Helper()
	log := attemptLog(b)
	if len(log) == 0 {
		t.Fatalf("waiting for attempt %d with an empty attempt_log: %v", n+1, b)
	}
	last := log[len(log)-1]
	want := num(last["created"]) + float64(delay)
	if b["status"] != "processing" || num(b["attempts"]) != float64(n) || num(last["attempt"]) != float64(n) ||
		last["outcome"] != "failed" || b["failure_reason"] != nil || b["retry_stop_reason"] != nil || b["payment_method_used"] != nil {
		t.Fatalf("after attempt %d failed: %v", n, b)
	}
	if got := num(b["next_retry_at"]); got != want {
		t.Fatalf("after attempt %d failed at %.0f: next_retry_at %.0f, want %.0f (+%d s); %v", n, num(last["created"]), got, want, delay, b)
	}
}

func attemptLog(b map[string]any) []map[string]any {
	list, _ := b["attempt_log"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, a := range list {
		m, _ := a.(map[string]any)
		out = append(out, m)
	}
	return out
}

// methodAt is the agreement's payment method i.
func methodAt(t *testing.T, agreement map[string]any, i int) map[string]any {
	t.Helper()
	list, _ := agreement["payment_methods"].([]any)
	if i >= len(list) {
		t.Fatalf("agreement has %d payment methods, want more than %d: %v", len(list), i, agreement)
	}
	m, _ := list[i].(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// num is a JSON number; -1 when v is not one.
func num(v any) float64 {
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return f
}

func repeat(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}
