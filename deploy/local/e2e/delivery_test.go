package e2e

// Webhook delivery end to end (issue 3 §5): everything through the gateway with API keys, to a
// TLS receiver on 127.0.0.1, verified with the independent Standard Webhooks verifier. The
// events are webhook_endpoint.* events, which webhooks-svc emits itself: the tests create,
// update and delete "trigger" endpoints (which nothing listens at) to cause them, and pick the
// deliveries about a trigger by data.object.id, so an endpoint's own creation event arriving
// too (or not) changes nothing.
//
// One stack, retry schedule 1s,2s,3s; each subtest has its own account and runs in parallel.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
)

// deliveryWait bounds how long one delivery (with its retries on the 1s,2s,3s schedule) may
// take; generous for a loaded 2-CPU machine and asynq's polling.
const deliveryWait = 45 * time.Second

func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: deliveryEnv("1s,2s,3s")})
	t.Cleanup(func() { p.noDeaths(t) })

	t.Run("signed and verifiable", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		key := p.newKey(t, "acct_signed", false)
		ep, secret := p.createEndpoint(t, key, rx.URL()+"/hooks", "*")
		trig := p.trigger(t, key)
		sent := time.Now()

		reqs := rx.WaitUntil(t, "/hooks", deliveryWait, "the created event of "+trig, hasAbout("webhook_endpoint.created", trig, 1))
		q := about(reqs, "webhook_endpoint.created", trig)[0]

		if err := verifier(t, secret).Verify(q.Header, q.Body); err != nil {
			t.Fatalf("the independent Standard Webhooks verifier refuses the delivery: %v\nheaders %v", err, q.Header)
		}
		tampered := append([]byte(nil), q.Body...)
		tampered[len(tampered)/2] ^= 1
		if err := verifier(t, secret).Verify(q.Header, tampered); !errors.Is(err, receiver.ErrNoMatchingSignature) {
			t.Fatalf("a tampered body verifies: %v", err)
		}
		ts, err := strconv.ParseInt(q.Header.Get("webhook-timestamp"), 10, 64)
		if err != nil || time.Unix(ts, 0).Before(sent.Add(-5*time.Second)) || time.Unix(ts, 0).After(time.Now().Add(5*time.Second)) {
			t.Fatalf("webhook-timestamp %q, sent at %s", q.Header.Get("webhook-timestamp"), sent)
		}
		if q.Method != "POST" || !strings.HasPrefix(q.Header.Get("Content-Type"), "application/json") || q.Header.Get("User-Agent") == "" {
			t.Fatalf("method %s, Content-Type %q, User-Agent %q", q.Method, q.Header.Get("Content-Type"), q.Header.Get("User-Agent"))
		}

		var body map[string]any
		if err := json.Unmarshal(q.Body, &body); err != nil {
			t.Fatalf("body is not JSON: %v\n%s", err, q.Body)
		}
		e := q.Event()
		if q.ID() != e.ID || !strings.HasPrefix(e.ID, "evt_") {
			t.Fatalf("webhook-id %q, event id %q", q.ID(), e.ID)
		}
		if e.Object != "event" || e.Livemode || e.APIVersion == "" || e.Created < sent.Unix()-5 || e.Data.Object["object"] != "webhook_endpoint" {
			t.Fatalf("envelope: %s", q.Body)
		}
		for _, k := range []string{"id", "object", "type", "api_version", "created", "livemode", "pending_webhooks", "request", "data"} {
			if _, ok := body[k]; !ok {
				t.Errorf("envelope has no %q: %s", k, q.Body)
			}
		}
		if _, ok := body["account"]; ok {
			t.Errorf("the owning account is rendered: %s", q.Body)
		}
		req, _ := body["request"].(map[string]any)
		if rid, _ := req["id"].(string); !strings.HasPrefix(rid, "req_") {
			t.Errorf("request.id %v: the create went through the API", body["request"])
		}
		if _, ok := e.Data.Object["secret"]; ok {
			t.Errorf("the endpoint's signing secret travels in the event: %s", q.Body)
		}

		res := call(t, "GET", p.GatewayURL+"/v1/events/"+e.ID, key, nil)
		if res.Status != 200 || res.Body["id"] != e.ID || res.Body["type"] != "webhook_endpoint.created" || objectIDOf(res.Body) != trig {
			t.Fatalf("GET the event: %d %s", res.Status, res.Raw)
		}
		d := p.waitDelivery(t, key, e.ID, ep, deliveryWait, "succeeded", statusIs("succeeded"))
		if !strings.HasPrefix(idOf(d["id"]), "wd_") || idOf(d["event"]) != e.ID || d["object"] != "webhook_delivery" {
			t.Fatalf("delivery: %v", d)
		}
		if got := attemptStatuses(d); len(got) != 1 || got[0] != 200 {
			t.Fatalf("attempts %v: %v", got, d["attempts"])
		}
	})

	t.Run("subscriptions filter by type and *", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		key := p.newKey(t, "acct_filter", false)
		keyLive := p.newKey(t, "acct_filter", true)
		keyOther := p.newKey(t, "acct_filterother", false)
		p.createEndpoint(t, key, rx.URL()+"/star", "*")
		p.createEndpoint(t, key, rx.URL()+"/created", "webhook_endpoint.created")
		p.createEndpoint(t, key, rx.URL()+"/upddel", "webhook_endpoint.updated", "webhook_endpoint.deleted")
		p.createEndpoint(t, keyLive, rx.URL()+"/live", "*")
		p.createEndpoint(t, keyOther, rx.URL()+"/other", "*")

		trig := p.trigger(t, key)
		p.updateTrigger(t, key, trig, map[string]any{"description": "changed"})
		p.deleteTrigger(t, key, trig)
		otherTrig := p.trigger(t, keyOther)

		rx.WaitUntil(t, "/star", deliveryWait, "created, updated, deleted of "+trig, func(r []receiver.Request) bool {
			return len(about(r, "webhook_endpoint.created", trig)) > 0 && len(about(r, "webhook_endpoint.updated", trig)) > 0 &&
				len(about(r, "webhook_endpoint.deleted", trig)) > 0
		})
		rx.WaitUntil(t, "/created", deliveryWait, "the created event", hasAbout("webhook_endpoint.created", trig, 1))
		rx.WaitUntil(t, "/upddel", deliveryWait, "updated and deleted", func(r []receiver.Request) bool {
			return len(about(r, "webhook_endpoint.updated", trig)) > 0 && len(about(r, "webhook_endpoint.deleted", trig)) > 0
		})
		rx.WaitUntil(t, "/other", deliveryWait, "account B's own event", hasAbout("webhook_endpoint.created", otherTrig, 1))
		// Anything wrongly routed would have been sent with the rest; give it a moment more.
		time.Sleep(2 * time.Second)

		for path, allowed := range map[string][]string{
			"/created": {"webhook_endpoint.created"},
			"/upddel":  {"webhook_endpoint.updated", "webhook_endpoint.deleted"},
		} {
			for _, q := range rx.Requests(path) {
				if e := q.Event(); !slices.Contains(allowed, e.Type) {
					t.Errorf("%s subscribed to %v received %s", path, allowed, e.Type)
				}
			}
		}
		for _, q := range rx.Requests("/live") {
			if !q.Event().Livemode {
				t.Errorf("a live-mode endpoint received a test-mode event: %s", q.Body)
			}
		}
		for _, q := range rx.Requests("/star") {
			if q.Event().Livemode {
				t.Errorf("a test-mode endpoint received a live-mode event: %s", q.Body)
			}
		}
		for _, path := range []string{"/star", "/created", "/upddel", "/live"} {
			if n := len(about(rx.Requests(path), "", otherTrig)); n > 0 {
				t.Errorf("%s received %d events of another account", path, n)
			}
		}
		if n := len(about(rx.Requests("/other"), "", trig)); n > 0 {
			t.Errorf("account B's endpoint received %d events of account A", n)
		}
		upd := about(rx.Requests("/star"), "webhook_endpoint.updated", trig)[0].Event()
		if upd.Data.PreviousAttributes == nil {
			t.Errorf("updated event without previous_attributes: %+v", upd)
		} else if _, ok := upd.Data.PreviousAttributes["description"]; !ok {
			t.Errorf("previous_attributes without description: %v", upd.Data.PreviousAttributes)
		}
		if upd.Data.Object["description"] != "changed" {
			t.Errorf("updated event's object: %v", upd.Data.Object)
		}

		// The event list's type filter, exact and family.
		created := p.eventIDs(t, key, "type=webhook_endpoint.created")
		family := p.eventIDs(t, key, "type=webhook_endpoint.*")
		evCreated := about(rx.Requests("/star"), "webhook_endpoint.created", trig)[0].ID()
		evDeleted := about(rx.Requests("/star"), "webhook_endpoint.deleted", trig)[0].ID()
		if !created[evCreated] || created[evDeleted] || !family[evCreated] || !family[evDeleted] {
			t.Errorf("type filters: created %v, family %v", created, family)
		}
	})

	t.Run("fails 3 times then succeeds: 4 attempts, one webhook-id", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		rx.ScriptPerEvent("/flaky", receiver.Fail(3, 500), receiver.OK())
		key := p.newKey(t, "acct_retries", false)
		ep, secret := p.createEndpoint(t, key, rx.URL()+"/flaky", "webhook_endpoint.deleted")
		trig := p.trigger(t, key)
		p.deleteTrigger(t, key, trig)

		rx.WaitUntil(t, "/flaky", deliveryWait, "a 2xx after three 500s", answeredAbout("webhook_endpoint.deleted", trig))
		time.Sleep(1500 * time.Millisecond) // no fifth attempt
		reqs := about(rx.Requests("/flaky"), "webhook_endpoint.deleted", trig)
		if len(reqs) != 4 {
			t.Fatalf("%d attempts, want 4:\n%s", len(reqs), receiver.Summary(reqs))
		}
		v := verifier(t, secret)
		for i, q := range reqs {
			if want := []int{500, 500, 500, 200}[i]; q.Status != want {
				t.Errorf("attempt %d answered %d, want %d", i+1, q.Status, want)
			}
			if q.ID() != reqs[0].ID() || q.ID() != q.Event().ID {
				t.Errorf("attempt %d: webhook-id %q, first %q, body id %q", i+1, q.ID(), reqs[0].ID(), q.Event().ID)
			}
			if err := v.Verify(q.Header, q.Body); err != nil {
				t.Errorf("attempt %d does not verify: %v", i+1, err)
			}
		}
		t.Run("spaced by the schedule", func(t *testing.T) {
			// 1s, 2s, 3s with ±10% jitter, counted from the end of the previous attempt.
			for i := 1; i < len(reqs); i++ {
				gap := reqs[i].Time.Sub(reqs[i-1].Answered)
				min := time.Duration(float64(i) * 0.85 * float64(time.Second))
				t.Logf("attempt %d came %s after the previous one (scheduled %ds ±10%%)", i+1, gap.Round(time.Millisecond), i)
				if gap < min {
					t.Errorf("attempt %d came %s after the previous one, want at least %s", i+1, gap.Round(time.Millisecond), min)
				}
			}
		})
		evt := reqs[0].ID()
		d := p.waitDelivery(t, key, evt, ep, 10*time.Second, "succeeded", statusIs("succeeded"))
		if got := fmt.Sprint(attemptStatuses(d)); got != "[200 500 500 500]" {
			t.Errorf("recorded attempts %s: %v", got, d["attempts"])
		}
		if all := p.deliveries(t, key, evt); len(all) != 1 {
			t.Errorf("%d deliveries for one event and one endpoint: %v", len(all), all)
		}
		found := false
		for _, o := range listAll(t, key, p.GatewayURL+"/v1/webhook_endpoints/"+ep+"/deliveries") {
			found = found || o["id"] == d["id"]
		}
		if !found {
			t.Errorf("GET /v1/webhook_endpoints/%s/deliveries does not list %v", ep, d["id"])
		}

		// A retry by hand sends it once more, with the same webhook-id.
		res := call(t, "POST", p.GatewayURL+"/v1/webhook_deliveries/"+idOf(d["id"])+"/retry", key, nil)
		if res.Status != 200 {
			t.Fatalf("retry: %d %s", res.Status, res.Raw)
		}
		reqs = rx.WaitUntil(t, "/flaky", deliveryWait, "the retry by hand", hasAbout("webhook_endpoint.deleted", trig, 5))
		if q := about(reqs, "webhook_endpoint.deleted", trig)[4]; q.ID() != evt {
			t.Errorf("retry by hand: webhook-id %q, want %q", q.ID(), evt)
		}
		p.waitDelivery(t, key, evt, ep, 10*time.Second, "succeeded with 5 attempts", func(d map[string]any) bool {
			return d["status"] == "succeeded" && len(attempts(d)) == 5
		})
	})

	t.Run("429 and 503 with Retry-After delay the next try", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		rx.ScriptPerEvent("/busy", receiver.RetryAfter(1, 429, "3"), receiver.RetryAfter(1, 503, "3"), receiver.OK())
		key := p.newKey(t, "acct_retryafter", false)
		p.createEndpoint(t, key, rx.URL()+"/busy", "webhook_endpoint.deleted")
		trig := p.trigger(t, key)
		p.deleteTrigger(t, key, trig)
		rx.WaitUntil(t, "/busy", deliveryWait, "a 2xx after 429 and 503", answeredAbout("webhook_endpoint.deleted", trig))
		reqs := about(rx.Requests("/busy"), "webhook_endpoint.deleted", trig)
		if len(reqs) != 3 {
			t.Fatalf("%d attempts, want 3:\n%s", len(reqs), receiver.Summary(reqs))
		}
		for i := 1; i < 3; i++ {
			// The schedule alone would wait 1s then 2s; Retry-After asks for 3s each time, and
			// is a floor: a little slack for the two clocks, none for jitter.
			gap := reqs[i].Time.Sub(reqs[i-1].Answered)
			t.Logf("attempt %d came %s after a Retry-After: 3", i+1, gap.Round(time.Millisecond))
			if gap < 2900*time.Millisecond {
				t.Errorf("attempt %d came %s after a Retry-After: 3 (answered %d)", i+1, gap.Round(time.Millisecond), reqs[i-1].Status)
			}
		}
	})

	t.Run("410 disables the endpoint", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		rx.Script("/gone", receiver.Gone())
		key := p.newKey(t, "acct_gone", false)
		ep, _ := p.createEndpoint(t, key, rx.URL()+"/gone", "webhook_endpoint.deleted")
		p.createEndpoint(t, key, rx.URL()+"/audit", "webhook_endpoint.disabled")
		p.createEndpoint(t, key, rx.URL()+"/sentinel", "webhook_endpoint.deleted")
		trig := p.trigger(t, key)
		p.deleteTrigger(t, key, trig)

		rx.WaitUntil(t, "/gone", deliveryWait, "the delivery answered 410", hasAbout("webhook_endpoint.deleted", trig, 1))
		res := waitStatus(t, key, p.GatewayURL+"/v1/webhook_endpoints/"+ep, 200, 5*time.Second)
		for deadline := time.Now().Add(10 * time.Second); res.Body["status"] != "disabled" && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			res = call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints/"+ep, key, nil)
		}
		if res.Body["status"] != "disabled" {
			t.Fatalf("after a 410 the endpoint is %v: %s", res.Body["status"], res.Raw)
		}
		// webhook_endpoint.disabled is emitted, with the endpoint as it now is.
		audit := rx.WaitUntil(t, "/audit", deliveryWait, "webhook_endpoint.disabled", hasAbout("webhook_endpoint.disabled", ep, 1))
		if e := about(audit, "webhook_endpoint.disabled", ep)[0].Event(); e.Data.Object["status"] != "disabled" {
			t.Errorf("disabled event's object: %v", e.Data.Object)
		}
		// No retry after a 410, and a disabled endpoint receives nothing more.
		trig2 := p.trigger(t, key)
		p.deleteTrigger(t, key, trig2)
		rx.WaitUntil(t, "/sentinel", deliveryWait, "the second event at a sibling endpoint", hasAbout("webhook_endpoint.deleted", trig2, 1))
		time.Sleep(2 * time.Second)
		if reqs := rx.Requests("/gone"); len(reqs) != 1 {
			t.Fatalf("the gone endpoint got %d requests, want 1:\n%s", len(reqs), receiver.Summary(reqs))
		}
		evt := about(rx.Requests("/gone"), "webhook_endpoint.deleted", trig)[0].ID()
		d := p.waitDelivery(t, key, evt, ep, 10*time.Second, "failed", statusIs("failed"))
		if got := attemptStatuses(d); fmt.Sprint(got) != "[410]" {
			t.Errorf("attempts %v", got)
		}
	})

	t.Run("rotate_secret: two signatures until the old secret expires", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		key := p.newKey(t, "acct_rotate", false)
		ep, oldSecret := p.createEndpoint(t, key, rx.URL()+"/rot", "webhook_endpoint.deleted")
		res := call(t, "POST", p.GatewayURL+"/v1/webhook_endpoints/"+ep+"/rotate_secret", key, map[string]any{})
		newSecret, _ := res.Body["secret"].(string)
		if res.Status != 200 || !strings.HasPrefix(newSecret, "whsec_") || newSecret == oldSecret || res.Body["id"] != ep {
			t.Fatalf("rotate_secret: %d %s", res.Status, res.Raw)
		}
		if got := call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints/"+ep, key, nil); got.Body["secret"] != nil {
			t.Fatalf("the secret is shown again: %s", got.Raw)
		}
		trig := p.trigger(t, key)
		p.deleteTrigger(t, key, trig)
		q := about(rx.WaitUntil(t, "/rot", deliveryWait, "the delivery after rotation", hasAbout("webhook_endpoint.deleted", trig, 1)), "webhook_endpoint.deleted", trig)[0]
		entries, err := verifier(t, oldSecret, newSecret).Entries(q.Header, q.Body)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 || entries[0].Secret < 0 || entries[1].Secret < 0 || entries[0].Secret == entries[1].Secret {
			t.Fatalf("webhook-signature %q: want two v1 signatures, one per secret (old=0, new=1): %+v", q.Header.Get("webhook-signature"), entries)
		}
		for name, s := range map[string]string{"old": oldSecret, "new": newSecret} {
			if err := verifier(t, s).Verify(q.Header, q.Body); err != nil {
				t.Errorf("a receiver holding only the %s secret refuses it: %v", name, err)
			}
		}

		// With expires_in, the old secret stops signing once it expires.
		ep2, old2 := p.createEndpoint(t, key, rx.URL()+"/rot2", "webhook_endpoint.deleted")
		res = call(t, "POST", p.GatewayURL+"/v1/webhook_endpoints/"+ep2+"/rotate_secret", key, map[string]any{"expires_in": 1})
		new2, _ := res.Body["secret"].(string)
		if res.Status != 200 || !strings.HasPrefix(new2, "whsec_") {
			t.Fatalf("rotate_secret expires_in=1: %d %s", res.Status, res.Raw)
		}
		time.Sleep(2 * time.Second)
		trig2 := p.trigger(t, key)
		p.deleteTrigger(t, key, trig2)
		q = about(rx.WaitUntil(t, "/rot2", deliveryWait, "the delivery after expiry", hasAbout("webhook_endpoint.deleted", trig2, 1)), "webhook_endpoint.deleted", trig2)[0]
		entries, err = verifier(t, old2, new2).Entries(q.Header, q.Body)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Secret != 1 {
			t.Fatalf("after the old secret expired, webhook-signature %q: %+v", q.Header.Get("webhook-signature"), entries)
		}
		for _, bad := range []any{-1, 7*24*3600 + 1, "soon"} {
			res := call(t, "POST", p.GatewayURL+"/v1/webhook_endpoints/"+ep2+"/rotate_secret", key, map[string]any{"expires_in": bad})
			if res.Status != 400 || res.errParam() != "expires_in" {
				t.Errorf("expires_in %v: %d %s", bad, res.Status, res.Raw)
			}
		}
	})

	t.Run("a redirect is not followed and counts as a failed attempt", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		rx.Script("/redir", receiver.Redirect(rx.URL()+"/private-target"))
		key := p.newKey(t, "acct_redirect", false)
		ep, _ := p.createEndpoint(t, key, rx.URL()+"/redir", "webhook_endpoint.deleted")
		trig := p.trigger(t, key)
		p.deleteTrigger(t, key, trig)
		reqs := rx.WaitUntil(t, "/redir", deliveryWait, "a retry after the 302", hasAbout("webhook_endpoint.deleted", trig, 2))
		if n := rx.Count("/private-target"); n != 0 {
			t.Fatalf("the redirect was followed (%d requests at its target)", n)
		}
		evt := about(reqs, "webhook_endpoint.deleted", trig)[0].ID()
		d := p.waitDelivery(t, key, evt, ep, 10*time.Second, "with 2 attempts", func(d map[string]any) bool { return len(attempts(d)) >= 2 })
		if d["status"] == "succeeded" {
			t.Fatalf("a 302 counted as success: %v", d)
		}
		if got := attemptStatuses(d); got[0] != 302 {
			t.Errorf("attempts %v, want 302s", got)
		}
	})

	t.Run("delivery_success in all three states", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		release := make(chan struct{})
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()
		rx.Script("/held", receiver.Hold(release))
		rx.Script("/fail", receiver.Status(500))
		key := p.newKey(t, "acct_dsuccess", false)
		epAll, _ := p.createEndpoint(t, key, rx.URL()+"/all", "*")
		epHeld, _ := p.createEndpoint(t, key, rx.URL()+"/held", "webhook_endpoint.updated")
		epFail, _ := p.createEndpoint(t, key, rx.URL()+"/fail", "webhook_endpoint.deleted")

		// created: one delivery (to /all), succeeds. updated: /all succeeds, /held stays
		// pending until released. deleted: /all succeeds, /fail fails after 4 attempts.
		trig := p.trigger(t, key)
		p.updateTrigger(t, key, trig, map[string]any{"description": "x"})
		p.deleteTrigger(t, key, trig)

		all := rx.WaitUntil(t, "/all", deliveryWait, "the three events", func(r []receiver.Request) bool {
			return len(about(r, "webhook_endpoint.created", trig)) > 0 && len(about(r, "webhook_endpoint.updated", trig)) > 0 &&
				len(about(r, "webhook_endpoint.deleted", trig)) > 0
		})
		evOK := about(all, "webhook_endpoint.created", trig)[0].ID()
		evPending := about(all, "webhook_endpoint.updated", trig)[0].ID()
		evFailed := about(all, "webhook_endpoint.deleted", trig)[0].ID()
		rx.WaitUntil(t, "/held", deliveryWait, "the held delivery", hasAbout("webhook_endpoint.updated", trig, 1))
		p.waitDelivery(t, key, evOK, epAll, deliveryWait, "succeeded", statusIs("succeeded"))
		p.waitDelivery(t, key, evPending, epAll, deliveryWait, "succeeded", statusIs("succeeded"))
		p.waitDelivery(t, key, evFailed, epAll, deliveryWait, "succeeded", statusIs("succeeded"))
		p.waitDelivery(t, key, evFailed, epFail, deliveryWait, "failed", statusIs("failed"))
		if d := p.waitDelivery(t, key, evPending, epHeld, time.Second, "pending", statusIs("pending")); len(attempts(d)) != 0 {
			// The attempt in flight is not recorded until it ends.
			t.Logf("pending delivery shows attempts while in flight: %v", d["attempts"])
		}

		// The event's delivery_success follows its deliveries' outcomes by a write of its own,
		// just after them, and the two lists are two requests: the check is repeated until it
		// holds (or deliveryWait has passed), then its failures are reported.
		check := func(state string, wantTrue, wantFalse []string) {
			t.Helper()
			deadline := time.Now().Add(deliveryWait)
			for {
				yes := p.eventIDs(t, key, "delivery_success=true")
				no := p.eventIDs(t, key, "delivery_success=false")
				var failures []string
				for _, id := range wantTrue {
					if !yes[id] || no[id] {
						failures = append(failures, fmt.Sprintf("%s: %s should be delivery_success=true (in true: %v, in false: %v)", state, id, yes[id], no[id]))
					}
				}
				for _, id := range wantFalse {
					if yes[id] || !no[id] {
						failures = append(failures, fmt.Sprintf("%s: %s should be delivery_success=false (in true: %v, in false: %v)", state, id, yes[id], no[id]))
					}
				}
				if len(failures) == 0 {
					return
				}
				if time.Now().After(deadline) {
					for _, f := range failures {
						t.Error(f)
					}
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		check("held", []string{evOK}, []string{evPending, evFailed})
		if res := call(t, "GET", p.GatewayURL+"/v1/events/"+evPending, key, nil); res.Body["pending_webhooks"] != float64(1) {
			t.Errorf("pending_webhooks of the half-delivered event: %v", res.Body["pending_webhooks"])
		}
		if res := call(t, "GET", p.GatewayURL+"/v1/events/"+evFailed, key, nil); res.Body["pending_webhooks"] != float64(0) {
			t.Errorf("pending_webhooks of the event whose delivery failed: %v", res.Body["pending_webhooks"])
		}
		if res := call(t, "GET", p.GatewayURL+"/v1/events?delivery_success=maybe", key, nil); res.Status != 400 || res.errParam() != "delivery_success" {
			t.Errorf("delivery_success=maybe: %d %s", res.Status, res.Raw)
		}

		close(release)
		released = true
		p.waitDelivery(t, key, evPending, epHeld, deliveryWait, "succeeded", statusIs("succeeded"))
		check("released", []string{evOK, evPending}, []string{evFailed})
		if res := call(t, "GET", p.GatewayURL+"/v1/events/"+evPending, key, nil); res.Body["pending_webhooks"] != float64(0) {
			t.Errorf("pending_webhooks after both deliveries succeeded: %v", res.Body["pending_webhooks"])
		}
	})
}
