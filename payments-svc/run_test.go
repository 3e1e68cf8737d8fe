package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/servicetest"
)

// Component tests: the whole service through run(), on a free port, against the embedded
// store and Redis, with requests signed the way the gateway signs them.

// TestComponent runs what every service behind the gateway must do through run(): boot,
// health, identity, errors, configuration.
func TestComponent(t *testing.T) {
	servicetest.Component(t, run, map[string]string{"REDIS_URL": testkit.Redis(t)})
}

// instance is a running service and its environment.
type instance struct {
	*servicetest.Process
	env map[string]string
}

// start runs the service on its own store and Redis.
func start(t *testing.T, env ...string) *instance {
	t.Helper()
	vars := servicetest.Env(t)
	maps.Copy(vars, map[string]string{"REDIS_URL": testkit.Redis(t), "OUTBOX_RELAY_INTERVAL": "100ms"})
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	return &instance{Process: servicetest.Start(t, run, vars, "http"), env: vars}
}

// published returns the events the service put on the events queue (nothing consumes it in
// these tests) about the payment request id, the request's own and its charges', oldest first.
func (s *instance) published(t *testing.T, id string) []events.Event {
	t.Helper()
	return servicetest.PublishedAbout(t, s.env["REDIS_URL"], id, "payment_request")
}

func agreementBody(tokens ...string) string {
	var methods []string
	for i, tok := range tokens {
		methods = append(methods, fmt.Sprintf(`{"type":"card","token":%q,"preferred":%t}`, tok, i == 0))
	}
	return `{"tenant":{"name":"Ada Lovelace","email":"ada@example.com"},"payment_methods":[` + strings.Join(methods, ",") + `]}`
}

func mustStatus(t *testing.T, r servicetest.Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
}

// waitFor polls the request until cond holds.
func waitFor(t *testing.T, c *servicetest.Client, id string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := c.Do(http.MethodGet, "/v1/payment_requests/"+id, "")
		mustStatus(t, r, http.StatusOK)
		if cond(r.Body) {
			return r.Body
		}
		if time.Now().After(deadline) {
			t.Fatalf("payment request %s never reached the expected state: %s", id, r.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func status(s string) func(map[string]any) bool {
	return func(b map[string]any) bool { return b["status"] == s }
}

func TestPaymentsComponent(t *testing.T) {
	p := start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", p.Logs())
		}
	})
	newClient := func(t *testing.T) *servicetest.Client { return servicetest.NewClient(t, p.URL("http")) }
	agreement := func(t *testing.T, c *servicetest.Client, tokens ...string) map[string]any {
		t.Helper()
		r := c.Do(http.MethodPost, "/v1/payment_agreements", agreementBody(tokens...))
		mustStatus(t, r, http.StatusOK)
		return r.Body
	}
	request := func(t *testing.T, c *servicetest.Client, pa string) map[string]any {
		t.Helper()
		r := c.Do(http.MethodPost, "/v1/payment_requests", fmt.Sprintf(`{"payment_agreement":%q,"amount":12500,"currency":"EUR","description":"November rent"}`, pa))
		mustStatus(t, r, http.StatusOK)
		return r.Body
	}

	t.Run("agreement object", func(t *testing.T) {
		c := newClient(t)
		r := c.Do(http.MethodPost, "/v1/payment_agreements", `{"tenant":{"name":"Ada","email":"ada@example.com"},"payment_methods":[`+
			`{"type":"sepa_debit","token":"tok_test_insufficient_funds"},{"type":"card","token":"tok_test_success","preferred":true}],`+
			`"acceptance":{"accepted_at":1700000000,"ip_address":"203.0.113.9","user_agent":"Mozilla/5.0"},"metadata":{"unit":"4B"}}`)
		mustStatus(t, r, http.StatusOK)
		if strings.Contains(string(r.Raw), "tok_test") {
			t.Errorf("the agreement shows a raw token: %s", r.Raw)
		}
		pms := r.Body["payment_methods"].([]any)
		first, second := pms[0].(map[string]any), pms[1].(map[string]any)
		if first["type"] != "card" || first["preferred"] != true || first["last4"] != "cess" || second["last4"] != "unds" {
			t.Errorf("methods not in charge order (preferred first) or last4 wrong: %s", r.Raw)
		}
		if !strings.HasPrefix(first["id"].(string), "pm_") || first["status"] != "active" || r.Body["status"] != "active" {
			t.Errorf("unexpected agreement: %s", r.Raw)
		}
		acc := r.Body["acceptance"].(map[string]any)
		if acc["accepted_at"] != float64(1700000000) || acc["ip_address"] != "203.0.113.9" {
			t.Errorf("acceptance = %v", acc)
		}
		got := c.Do(http.MethodGet, "/v1/payment_agreements/"+r.Body["id"].(string), "")
		mustStatus(t, got, http.StatusOK)
		if string(got.Raw) != string(r.Raw) {
			t.Errorf("retrieve differs from create:\n%s\n%s", got.Raw, r.Raw)
		}
		if other := c.Mode(true).Do(http.MethodGet, "/v1/payment_agreements/"+r.Body["id"].(string), ""); other.Status != http.StatusNotFound {
			t.Errorf("live key sees a test agreement: %d", other.Status)
		}
	})

	t.Run("agreement validation", func(t *testing.T) {
		c := newClient(t)
		for _, tc := range []struct {
			body, code, param string
		}{
			{`{}`, "parameter_missing", "tenant"},
			{`{"tenant":{"name":"A","email":"nope"},"payment_methods":[{"type":"card","token":"tok_test_success","preferred":true}]}`, "parameter_invalid", "tenant.email"},
			{`{"tenant":{"name":"A","email":"a@example.com"},"payment_methods":[]}`, "parameter_invalid", "payment_methods"},
			{`{"tenant":{"name":"A","email":"a@example.com"},"payment_methods":[{"type":"card","token":"tok_test_success"}]}`, "parameter_invalid", "payment_methods"},
			{`{"tenant":{"name":"A","email":"a@example.com"},"payment_methods":[{"type":"card","token":"tok_test_success","preferred":true},{"type":"card","token":"tok_test_success","preferred":true}]}`, "parameter_invalid", "payment_methods[1].preferred"},
			{`{"tenant":{"name":"A","email":"a@example.com"},"payment_methods":[{"type":"cash","token":"tok_test_success","preferred":true}]}`, "parameter_invalid", "payment_methods[0].type"},
			{`{"tenant":{"name":"A","email":"a@example.com"},"payment_methods":[{"type":"card","token":"tok_test_success","preferred":true},{"type":"card","token":"tok_visa"}]}`, "parameter_invalid", "payment_methods[1].token"},
			{`{"tenant":{"name":"A","email":"a@example.com"},"payment_methods":[{"type":"card","token":"tok_test_success","preferred":true,"cvc":"123"}]}`, "parameter_unknown", "payment_methods[0].cvc"},
			{`{"tenant":{"name":"A","email":"a@example.com"},"payment_methods":[{"type":"card","token":"tok_test_success","preferred":true}],"acceptance":{"accepted_at":1700000000,"ip_address":"300.1.1.1"}}`, "parameter_invalid", "acceptance.ip_address"},
		} {
			r := c.Do(http.MethodPost, "/v1/payment_agreements", tc.body)
			if r.Status != http.StatusBadRequest || r.ErrCode() != tc.code || r.ErrParam() != tc.param {
				t.Errorf("%s: %d %s/%s, want 400 %s/%s (%s)", tc.body, r.Status, r.ErrCode(), r.ErrParam(), tc.code, tc.param, r.Raw)
			}
		}
		if r := c.Do(http.MethodGet, "/v1/payment_agreements", ""); len(r.Body["data"].([]any)) != 0 {
			t.Errorf("refused creates stored agreements: %s", r.Raw)
		}
		live := c.Mode(true).Do(http.MethodPost, "/v1/payment_agreements", agreementBody("tok_test_success"))
		if live.Status != http.StatusBadRequest || live.ErrCode() != "processor_not_configured" {
			t.Errorf("live agreement: %d %s", live.Status, live.Raw)
		}
	})

	t.Run("success first time", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_success")
		pr := request(t, c, pa["id"].(string))
		if pr["status"] != "pending" || pr["attempts"] != float64(0) || pr["payment_method_used"] != nil ||
			pr["next_retry_at"] != nil || pr["failure_reason"] != nil || pr["currency"] != "eur" {
			t.Errorf("created request: %v", pr)
		}
		done := waitFor(t, c, pr["id"].(string), status("succeeded"))
		pm := pa["payment_methods"].([]any)[0].(map[string]any)["id"]
		if done["payment_method_used"] != pm || done["attempts"] != float64(1) || done["retry_stop_reason"] != "succeeded" ||
			len(done["attempt_log"].([]any)) != 1 {
			t.Errorf("succeeded request: %v", done)
		}
	})

	t.Run("fallback to the second method", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_declined", "tok_test_success")
		pr := request(t, c, pa["id"].(string))
		done := waitFor(t, c, pr["id"].(string), status("succeeded"))
		pms := pa["payment_methods"].([]any)
		if done["payment_method_used"] != pms[1].(map[string]any)["id"] {
			t.Errorf("used %v, want the second method", done["payment_method_used"])
		}
		log := done["attempt_log"].([]any)
		if len(log) != 2 || log[0].(map[string]any)["failure_code"] != "declined" || log[1].(map[string]any)["outcome"] != "succeeded" {
			t.Errorf("attempt_log = %v", log)
		}
		// The agreement records the hard decline right after the request its outcome.
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := c.Do(http.MethodGet, "/v1/payment_agreements/"+pa["id"].(string), "")
			first := got.Body["payment_methods"].([]any)[0].(map[string]any)
			if first["status"] == "failed" && first["failure_code"] == "declined" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("hard-declined method is %v", first)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("charges in attempt_log and their events", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_insufficient_funds", "tok_test_succeed_from_attempt_2")
		pms := pa["payment_methods"].([]any)
		first, second := pms[0].(map[string]any)["id"], pms[1].(map[string]any)["id"]
		id := request(t, c, pa["id"].(string))["id"].(string)
		waitFor(t, c, id, func(b map[string]any) bool { return b["next_retry_at"] != nil })
		adv := c.Do(http.MethodPost, "/v1/test_helpers/payment_requests/"+id+"/advance", "")
		mustStatus(t, adv, http.StatusOK)
		if adv.Body["status"] != "succeeded" {
			t.Fatalf("after advance: %s", adv.Raw)
		}
		// Attempt 1 charged both methods and both failed; attempt 2 charged the first (failed)
		// and the second (succeeded).
		want := []struct {
			attempt float64
			method  any
			outcome string
			code    any
		}{{1, first, "failed", "insufficient_funds"}, {1, second, "failed", "insufficient_funds"}, {2, first, "failed", "insufficient_funds"}, {2, second, "succeeded", nil}}
		log := adv.Body["attempt_log"].([]any)
		if len(log) != len(want) {
			t.Fatalf("attempt_log: %s", adv.Raw)
		}
		var raw struct {
			AttemptLog []json.RawMessage `json:"attempt_log"`
		}
		if err := json.Unmarshal(adv.Raw, &raw); err != nil {
			t.Fatal(err)
		}
		var chargeIDs []string
		for i, w := range want {
			ch := log[i].(map[string]any)
			chID, _ := ch["id"].(string)
			if !ids.Valid(ids.Charge, chID) || ch["object"] != "charge" || ch["payment_request"] != id || ch["payment_agreement"] != pa["id"] ||
				ch["attempt"] != w.attempt || ch["payment_method"] != w.method || ch["amount"] != float64(12500) || ch["currency"] != "eur" ||
				ch["outcome"] != w.outcome || ch["failure_code"] != w.code || ch["livemode"] != false || ch["created"] == nil {
				t.Errorf("attempt_log[%d] = %s", i, raw.AttemptLog[i])
			}
			if len(ch) != 12 {
				t.Errorf("attempt_log[%d] has %d fields, want the charge's 12: %s", i, len(ch), raw.AttemptLog[i])
			}
			chargeIDs = append(chargeIDs, chID)
		}
		if !slices.IsSorted(chargeIDs) || len(slices.Compact(slices.Clone(chargeIDs))) != len(chargeIDs) {
			t.Errorf("charge ids are not distinct and time-ordered: %v", chargeIDs)
		}
		if again := c.Do(http.MethodGet, "/v1/payment_requests/"+id, ""); string(again.Raw) != string(adv.Raw) {
			t.Errorf("a retrieve shows other charges than advance answered:\n%s\n%s", again.Raw, adv.Raw)
		}

		// One event per charge, before the request's outcome of its attempt, with the charge
		// as attempt_log shows it.
		wantTypes := []string{eventtype.PaymentRequestCreated, eventtype.PaymentRequestProcessing,
			eventtype.ChargeFailed, eventtype.ChargeFailed, eventtype.PaymentRequestRetrying,
			eventtype.ChargeFailed, eventtype.ChargeSucceeded, eventtype.PaymentRequestSucceeded}
		var evs []events.Event
		for deadline := time.Now().Add(10 * time.Second); ; {
			if evs = p.published(t, id); len(evs) >= len(wantTypes) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var types []string
		var charges []string
		for _, ev := range evs {
			types = append(types, ev.Type)
			if ev.Type == eventtype.ChargeFailed || ev.Type == eventtype.ChargeSucceeded {
				charges = append(charges, string(ev.Data.Object))
				if ev.Request.ID != nil {
					t.Errorf("%s of the engine names API request %s", ev.Type, *ev.Request.ID)
				}
			}
		}
		if !slices.Equal(types, wantTypes) {
			t.Fatalf("events %v; want %v", types, wantTypes)
		}
		for i, ch := range charges {
			if ch != string(raw.AttemptLog[i]) {
				t.Errorf("charge event %d's object %s; attempt_log[%d] is %s", i, ch, i, raw.AttemptLog[i])
			}
		}
	})

	t.Run("succeed from attempt 2 via advance", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_succeed_from_attempt_2")
		pr := request(t, c, pa["id"].(string))
		id := pr["id"].(string)
		waiting := waitFor(t, c, id, func(b map[string]any) bool { return b["next_retry_at"] != nil })
		log := waiting["attempt_log"].([]any)
		failedAt := log[len(log)-1].(map[string]any)["created"].(float64)
		if waiting["status"] != "processing" || waiting["attempts"] != float64(1) || waiting["next_retry_at"] != failedAt+86400 {
			t.Fatalf("after attempt 1: %v (failure at %v)", waiting, failedAt)
		}
		adv := c.Do(http.MethodPost, "/v1/test_helpers/payment_requests/"+id+"/advance", "")
		mustStatus(t, adv, http.StatusOK)
		if adv.Body["status"] != "succeeded" || adv.Body["attempts"] != float64(2) {
			t.Errorf("after advance: %s", adv.Raw)
		}
		again := c.Do(http.MethodPost, "/v1/test_helpers/payment_requests/"+id+"/advance", "")
		if again.Status != http.StatusBadRequest || again.ErrCode() != "invalid_state" {
			t.Errorf("advance with nothing scheduled: %d %s", again.Status, again.Raw)
		}
		if live := c.Mode(true).Do(http.MethodPost, "/v1/test_helpers/payment_requests/"+id+"/advance", ""); live.Status != http.StatusNotFound {
			t.Errorf("advance in live mode: %d %s", live.Status, live.Raw)
		}
	})

	t.Run("all attempts fail", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_insufficient_funds")
		id := request(t, c, pa["id"].(string))["id"].(string)
		waitFor(t, c, id, func(b map[string]any) bool { return b["next_retry_at"] != nil })
		adv := c.Do(http.MethodPost, "/v1/test_helpers/payment_requests/"+id+"/advance", "")
		mustStatus(t, adv, http.StatusOK)
		log := adv.Body["attempt_log"].([]any)
		failedAt := log[len(log)-1].(map[string]any)["created"].(float64)
		if adv.Body["attempts"] != float64(2) || adv.Body["next_retry_at"] != failedAt+72*3600 {
			t.Fatalf("after attempt 2: %s", adv.Raw)
		}
		adv = c.Do(http.MethodPost, "/v1/test_helpers/payment_requests/"+id+"/advance", "")
		mustStatus(t, adv, http.StatusOK)
		b := adv.Body
		if b["status"] != "failed" || b["attempts"] != float64(3) || b["failure_reason"] != "insufficient_funds" ||
			b["retry_stop_reason"] != "attempts_exhausted" || b["next_retry_at"] != nil {
			t.Errorf("after attempt 3: %s", adv.Raw)
		}
		cancel := c.Do(http.MethodPost, "/v1/payment_requests/"+id+"/cancel", "")
		if cancel.Status != http.StatusBadRequest || cancel.ErrCode() != "invalid_state" {
			t.Errorf("cancel of a failed request: %d %s", cancel.Status, cancel.Raw)
		}
	})

	t.Run("hard decline of the only method", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_declined")
		id := request(t, c, pa["id"].(string))["id"].(string)
		b := waitFor(t, c, id, status("failed"))
		if b["retry_stop_reason"] != "no_usable_method" || b["failure_reason"] != "declined" || b["attempts"] != float64(1) {
			t.Errorf("request: %v", b)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_succeed_from_attempt_3")
		id := request(t, c, pa["id"].(string))["id"].(string)
		waitFor(t, c, id, func(b map[string]any) bool { return b["next_retry_at"] != nil })
		r := c.Do(http.MethodPost, "/v1/payment_requests/"+id+"/cancel", "")
		mustStatus(t, r, http.StatusOK)
		if r.Body["status"] != "cancelled" || r.Body["retry_stop_reason"] != "cancelled" || r.Body["next_retry_at"] != nil {
			t.Errorf("cancelled: %s", r.Raw)
		}
		again := c.Do(http.MethodPost, "/v1/payment_requests/"+id+"/cancel", "")
		mustStatus(t, again, http.StatusOK)
		if string(again.Raw) != string(r.Raw) {
			t.Errorf("second cancel changed the request:\n%s\n%s", r.Raw, again.Raw)
		}
		if body := c.Do(http.MethodPost, "/v1/payment_requests/"+id+"/cancel", `{"reason":"x"}`); body.ErrCode() != "parameter_unknown" {
			t.Errorf("cancel with a body: %s", body.Raw)
		}
		ok := request(t, c, agreement(t, c, "tok_test_success")["id"].(string))["id"].(string)
		waitFor(t, c, ok, status("succeeded"))
		if r := c.Do(http.MethodPost, "/v1/payment_requests/"+ok+"/cancel", ""); r.Status != http.StatusBadRequest || r.ErrCode() != "invalid_state" {
			t.Errorf("cancel of a succeeded request: %d %s", r.Status, r.Raw)
		}
	})

	t.Run("bulk", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_success")["id"].(string)
		bad := fmt.Sprintf(`{"requests":[{"payment_agreement":%q,"amount":100,"currency":"eur"},{"payment_agreement":%q,"amount":0,"currency":"eur"}]}`, pa, pa)
		r := c.Do(http.MethodPost, "/v1/payment_requests/bulk", bad)
		if r.Status != http.StatusBadRequest || r.ErrParam() != "requests[1].amount" {
			t.Errorf("bulk with a bad element: %d %s", r.Status, r.Raw)
		}
		missing := `{"requests":[{"payment_agreement":"pa_01kaj0000000000000000000000","amount":100,"currency":"eur"}]}`
		if r := c.Do(http.MethodPost, "/v1/payment_requests/bulk", missing); r.Status != http.StatusBadRequest ||
			r.ErrCode() != "resource_missing" || r.ErrParam() != "requests[0].payment_agreement" {
			t.Errorf("bulk with a missing agreement: %d %s", r.Status, r.Raw)
		}
		if l := c.Do(http.MethodGet, "/v1/payment_requests", ""); len(l.Body["data"].([]any)) != 0 {
			t.Fatalf("a refused bulk created requests: %s", l.Raw)
		}
		var elems []string
		for i := range 3 {
			elems = append(elems, fmt.Sprintf(`{"payment_agreement":%q,"amount":%d,"currency":"gbp"}`, pa, 100+i))
		}
		ok := c.Do(http.MethodPost, "/v1/payment_requests/bulk", `{"requests":[`+strings.Join(elems, ",")+`]}`)
		mustStatus(t, ok, http.StatusOK)
		if ok.Body["object"] != "list" || ok.Body["total_created"] != float64(3) || ok.Body["url"] != "/v1/payment_requests/bulk" ||
			len(ok.Body["data"].([]any)) != 3 {
			t.Errorf("bulk: %s", ok.Raw)
		}
		for _, d := range ok.Body["data"].([]any) {
			waitFor(t, c, d.(map[string]any)["id"].(string), status("succeeded"))
		}
		l := c.Do(http.MethodGet, "/v1/payment_requests?status=succeeded&payment_agreement="+pa+"&limit=2", "")
		if len(l.Body["data"].([]any)) != 2 || l.Body["has_more"] != true {
			t.Errorf("filtered list: %s", l.Raw)
		}
		if e := c.Do(http.MethodPost, "/v1/payment_requests/bulk", `{"requests":[]}`); e.ErrParam() != "requests" {
			t.Errorf("empty bulk: %s", e.Raw)
		}
	})

	// The gateway answers 502 when the service dies mid-create, and the client's retry with the
	// same Idempotency-Key reaches the service again: it gets what the first create stored.
	t.Run("create retried with its idempotency key", func(t *testing.T) {
		c := newClient(t)
		k := c.WithKey("idem-agreement")
		a1, a2 := k.Do(http.MethodPost, "/v1/payment_agreements", agreementBody("tok_test_success")),
			k.Do(http.MethodPost, "/v1/payment_agreements", agreementBody("tok_test_success"))
		mustStatus(t, a1, http.StatusOK)
		mustStatus(t, a2, http.StatusOK)
		if a1.Str("id") != a2.Str("id") {
			t.Fatalf("two agreements for one key: %s %s", a1.Str("id"), a2.Str("id"))
		}
		pa := a1.Str("id")
		body := fmt.Sprintf(`{"payment_agreement":%q,"amount":700,"currency":"EUR"}`, pa)
		k = c.WithKey("idem-request")
		r1 := k.Do(http.MethodPost, "/v1/payment_requests", body)
		mustStatus(t, r1, http.StatusOK)
		waitFor(t, c, r1.Str("id"), status("succeeded"))
		r2 := k.Do(http.MethodPost, "/v1/payment_requests", body) // after the first was charged
		mustStatus(t, r2, http.StatusOK)
		if r2.Str("id") != r1.Str("id") || r2.Str("status") != "succeeded" {
			t.Fatalf("retry answered %s", r2.Raw)
		}
		// A create without a key is one of its own.
		if other := c.Do(http.MethodPost, "/v1/payment_requests", body); other.Str("id") == r1.Str("id") {
			t.Fatal("a create without a key got the keyed one")
		}
		bulk := fmt.Sprintf(`{"requests":[{"payment_agreement":%q,"amount":1,"currency":"EUR"},{"payment_agreement":%q,"amount":2,"currency":"EUR"}]}`, pa, pa)
		kb := c.WithKey("idem-bulk")
		b1, b2 := kb.Do(http.MethodPost, "/v1/payment_requests/bulk", bulk), kb.Do(http.MethodPost, "/v1/payment_requests/bulk", bulk)
		mustStatus(t, b2, http.StatusOK)
		ids1, ids2 := []string{}, []string{}
		for i := range 2 {
			ids1 = append(ids1, b1.Body["data"].([]any)[i].(map[string]any)["id"].(string))
			ids2 = append(ids2, b2.Body["data"].([]any)[i].(map[string]any)["id"].(string))
		}
		if !slices.Equal(ids1, ids2) || ids1[0] == ids1[1] {
			t.Fatalf("bulk retried: %v then %v", ids1, ids2)
		}
		l := c.Do(http.MethodGet, "/v1/payment_requests?payment_agreement="+pa+"&limit=10", "")
		if n := len(l.Body["data"].([]any)); n != 4 {
			t.Fatalf("%d requests stored, want 4 (one keyed, one without a key, two of the bulk): %s", n, l.Raw)
		}
		var created int
		for _, ev := range p.published(t, r1.Str("id")) {
			if ev.Type == eventtype.PaymentRequestCreated {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d payment_request.created events for one create retried", created)
		}
	})

	t.Run("agreement cancellation", func(t *testing.T) {
		c := newClient(t)
		pa := agreement(t, c, "tok_test_insufficient_funds")["id"].(string)
		id := request(t, c, pa)["id"].(string)
		waitFor(t, c, id, func(b map[string]any) bool { return b["next_retry_at"] != nil })
		r := c.Do(http.MethodPost, "/v1/payment_agreements/"+pa+"/cancel", "")
		mustStatus(t, r, http.StatusOK)
		if r.Body["status"] != "cancelled" || r.Body["cancelled_at"] == nil {
			t.Errorf("cancelled agreement: %s", r.Raw)
		}
		b := c.Do(http.MethodGet, "/v1/payment_requests/"+id, "").Body
		if b["status"] != "cancelled" || b["retry_stop_reason"] != "agreement_cancelled" {
			t.Errorf("request of a cancelled agreement: %v", b)
		}
		n := c.Do(http.MethodPost, "/v1/payment_requests", fmt.Sprintf(`{"payment_agreement":%q,"amount":1,"currency":"eur"}`, pa))
		if n.Status != http.StatusBadRequest || n.ErrCode() != "agreement_not_active" || n.ErrParam() != "payment_agreement" {
			t.Errorf("request against a cancelled agreement: %d %s", n.Status, n.Raw)
		}
		other := servicetest.NewClient(t, p.URL("http")).Do(http.MethodPost, "/v1/payment_requests", fmt.Sprintf(`{"payment_agreement":%q,"amount":1,"currency":"eur"}`, pa))
		if other.Status != http.StatusNotFound || other.ErrParam() != "payment_agreement" {
			t.Errorf("another account's agreement: %d %s", other.Status, other.Raw)
		}
	})
}
