package e2e

import (
	"slices"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
)

// Receivers that hang, reset, answer byte by byte, answer 500, 410 or 429 with Retry-After,
// or send a huge body, next to a healthy one: each is retried, disabled or throttled as
// docs/api.md and docs/events.md say; an answer's body is not read past its bound; a healthy
// endpoint's deliveries are not held up by the hostile ones.
func TestDrillHostileReceivers(t *testing.T) {
	t.Parallel()
	n := scale(12, 60)
	d := newDrill(t, "hostile receivers")
	env := deliveryEnv("1s,2s") // three attempts in all
	env["WEBHOOKS_TIMEOUT"] = "2s"
	// Few workers for the retries, so that slow receivers would exhaust them if they could.
	env["WEBHOOKS_CONCURRENCY"] = "8"
	p := startWith(t, stackConfig{env: env})
	rx := receiver.New(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hostile := map[string]receiver.Step{
		"/hang":    receiver.Hold(release),
		"/reset":   receiver.Reset(),
		"/trickle": receiver.Trickle(200 * time.Millisecond), // headers take 14 s
		"/500":     receiver.Status(500),
		"/410":     receiver.Gone(),
		"/huge":    receiver.Flood(1 << 30),
	}
	for path, step := range hostile {
		rx.Script(path, step)
	}
	rx.ScriptPerEvent("/429", receiver.RetryAfter(1, 429, "2"), receiver.OK())
	key := p.newKey(t, "acct_drillhostile", false)
	endpoints := map[string]string{}
	for _, path := range []string{"/healthy", "/hang", "/reset", "/trickle", "/500", "/410", "/429", "/huge"} {
		endpoints[path], _ = p.createEndpoint(t, key, rx.URL()+path, "webhook_endpoint.created")
	}
	d.did("8 endpoints: healthy, hang, reset, 14 s trickle, 500, 410, 429 with Retry-After: 2, a 1 GiB body; WEBHOOKS_TIMEOUT 2s, 8 retry workers")

	triggered := map[string]time.Time{}
	var triggers []string
	for range n {
		at := time.Now()
		id := p.trigger(t, key)
		triggers = append(triggers, id)
		triggered[id] = at
	}
	d.count(n, len(hostile)+1)
	d.did("%d events, each to every endpoint", n)

	// The healthy endpoint gets every event at once, whatever the others do.
	reqs := rx.WaitUntil(t, "/healthy", deliveryWait, "every event at the healthy endpoint", func(reqs []receiver.Request) bool {
		for _, id := range triggers {
			if !answeredAbout("webhook_endpoint.created", id)(reqs) {
				return false
			}
		}
		return true
	})
	var lags []time.Duration
	for _, id := range triggers {
		lags = append(lags, about(reqs, "webhook_endpoint.created", id)[0].Time.Sub(triggered[id]))
	}
	slices.Sort(lags)
	worst := lags[len(lags)-1]
	d.note("healthy endpoint: every event within %s of its write (median %s)", worst.Round(time.Millisecond), lags[len(lags)/2].Round(time.Millisecond))
	if worst > 5*time.Second {
		t.Errorf("the healthy endpoint waited %s for an event: slow receivers held it up", worst)
	}

	// Every delivery of the drill's events ends as documented.
	want := map[string]struct {
		status   string
		attempts int
		code     string // the last attempt's error_code
	}{
		"/hang":    {"failed", 3, "response_timeout"},
		"/trickle": {"failed", 3, "response_timeout"},
		"/reset":   {"failed", 3, "connection_failed"},
		"/500":     {"failed", 3, "http_status"},
		"/410":     {"failed", 1, "http_status"},
		"/429":     {"succeeded", 2, ""},
		"/huge":    {"succeeded", 1, ""},
		"/healthy": {"succeeded", 1, ""},
	}
	isTrigger := map[string]bool{}
	for _, id := range triggers {
		isTrigger[id] = true
	}
	objectOf := map[string]string{} // event id → the endpoint it is about
	for _, e := range listAll(t, key, p.GatewayURL+"/v1/events?type=webhook_endpoint.created") {
		objectOf[str(e["id"])] = objectIDOf(e)
	}
	deadline := time.Now().Add(scale(2*time.Minute, 5*time.Minute))
	for path, w := range want {
		// The 410 disables its endpoint: later events get a delivery that never runs.
		for {
			var ended, pending []map[string]any
			for _, del := range listAll(t, key, p.GatewayURL+"/v1/webhook_endpoints/"+endpoints[path]+"/deliveries") {
				if !isTrigger[objectOf[str(del["event"])]] {
					continue
				}
				if del["status"] == "pending" {
					pending = append(pending, del)
				} else {
					ended = append(ended, del)
				}
			}
			// The 410's: done once one ended and every other is parked (no next attempt): an
			// attempt queued before the endpoint was disabled parks its delivery when it runs,
			// which on a busy machine is after the first delivery has ended.
			parked := true
			for _, del := range pending {
				parked = parked && del["next_attempt_at"] == nil
			}
			if path == "/410" && len(ended) >= 1 && parked || len(ended) == n || time.Now().After(deadline) {
				checkDeliveries(t, d, path, ended, pending, n, w.status, w.attempts, w.code)
				break
			}
			time.Sleep(time.Second)
		}
	}
	if r := call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints/"+endpoints["/410"], key, nil); r.Body["status"] != "disabled" {
		t.Errorf("the endpoint that answered 410: %s", r.Raw)
	}

	// 429 with Retry-After: 2 → the second attempt no sooner than 2 s after the first.
	for _, id := range triggers {
		got := about(rx.Requests("/429"), "webhook_endpoint.created", id)
		if len(got) < 2 {
			t.Errorf("%d requests at /429 about %s", len(got), id)
			continue
		}
		if gap := got[1].Time.Sub(got[0].Answered); gap < 2*time.Second-50*time.Millisecond {
			t.Errorf("Retry-After: 2 was followed by a retry after %s", gap)
		}
	}
	// The 1 GiB answer: read up to the bound (64 KiB, plus what the connection buffers) and
	// the connection closed.
	var most int64
	for _, q := range rx.Requests("/huge") {
		most = max(most, q.Written)
	}
	d.note("1 GiB answer: at most %d KiB taken by the sender", most>>10)
	if most > 16<<20 {
		t.Errorf("the sender took %d bytes of a 1 GiB answer; the bound is 64 KiB", most)
	}
	p.noDeaths(t)
}

func checkDeliveries(t *testing.T, d *drill, path string, ended, pending []map[string]any, n int, status string, attempts int, code string) {
	t.Helper()
	if path != "/410" && len(ended) != n {
		t.Errorf("%s: %d of %d deliveries ended (%d pending)", path, len(ended), n, len(pending))
	}
	for _, del := range ended {
		as, _ := del["attempts"].([]any)
		last, _ := as[len(as)-1].(map[string]any)
		if del["status"] != status || len(as) != attempts || str(last["error_code"]) != code {
			t.Errorf("%s: delivery %s %v with %d attempts, last error_code %v; want %s, %d, %q", path, del["id"], del["status"], len(as), last["error_code"], status, attempts, code)
		}
	}
	for _, del := range pending {
		// Only the 410's: its endpoint is disabled, so what it had pending never runs.
		if as, _ := del["attempts"].([]any); path != "/410" || len(as) != 0 || del["next_attempt_at"] != nil {
			t.Errorf("%s: delivery %s pending with %d attempts, next at %v", path, del["id"], len(as), del["next_attempt_at"])
		}
	}
	d.found("%s: %d deliveries %s (%d attempts each, last error_code %q), %d pending", path, len(ended), status, attempts, code, len(pending))
}
