package e2e

// Drills of the event path (issue 3 §5, issue 29 §1): events are delivered at least once and
// never lost when webhooks-svc is killed with deliveries in flight, or when Redis is
// unreachable while the API is written to (drills_test.go has the drills' frame).

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/faultproxy"
	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/embedded/testkit"
)

// recoveryWait bounds how long the platform may take to deliver everything after a fault. A
// delivery task that was running when its process was killed is, in asynq, only handed out
// again once its lease has expired (30 s) and the recoverer, which runs every minute, has seen
// it: up to about 90 s unless webhooks-svc recovers such deliveries itself.
const recoveryWait = 150 * time.Second

func TestDrillWebhooksSvcKilledWhileDelivering(t *testing.T) {
	t.Parallel()
	d := newDrill(t, "webhooks-svc killed while delivering")
	p := startWith(t, stackConfig{env: deliveryEnv("1s,2s,3s,5s,8s")})
	rx := receiver.New(t)
	// The first 20 deliveries are answered at once; the rest are held in flight until after
	// the kill, so the kill meets deliveries done, in flight, and (maybe) not yet started.
	release := make(chan struct{})
	rx.Script("/slow", receiver.Step{Status: 200, N: 20}, receiver.Hold(release))
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	key := p.newKey(t, "acct_kill", false)
	p.createEndpoint(t, key, rx.URL()+"/slow", "webhook_endpoint.created")

	n := scale(50, 300)
	triggers := make([]string, n)
	for i := range triggers {
		triggers[i] = p.trigger(t, key)
	}
	rx.WaitUntil(t, "/slow", deliveryWait, "20 answered and 10 held", func(reqs []receiver.Request) bool {
		held := 0
		for _, q := range reqs {
			if !q.Done {
				held++
			}
		}
		return len(reqs)-held >= 20 && held >= 10
	})
	time.Sleep(500 * time.Millisecond) // a few more may arrive
	if err := p.Kill("webhooks-svc"); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	time.Sleep(500 * time.Millisecond)
	inFlight, answered := 0, 0
	for _, q := range rx.Requests("/slow") {
		switch {
		case q.Aborted || !q.Done:
			inFlight++
		case q.Succeeded():
			answered++
		}
	}
	d.did("SIGKILL of webhooks-svc with %d deliveries in flight and %d answered, of %d events (+1 for the endpoint's own)", inFlight, answered, n)
	d.count(n, 1)
	select {
	case err := <-p.Died():
		t.Fatalf("the kill was reported as an unexpected exit: %v", err)
	default:
	}
	close(release)
	released = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Restart(ctx, "webhooks-svc"); err != nil {
		t.Fatal(err)
	}

	rx.WaitUntil(t, "/slow", recoveryWait, "every event answered 2xx", func(reqs []receiver.Request) bool {
		for _, id := range triggers {
			if !answeredAbout("webhook_endpoint.created", id)(reqs) {
				return false
			}
		}
		return true
	})
	d.found("all %d events delivered %s after the kill", n, time.Since(killedAt).Round(100*time.Millisecond))

	reqs := rx.Requests("/slow")
	dups := 0
	for _, id := range triggers {
		got := about(reqs, "webhook_endpoint.created", id)
		for _, q := range got[1:] {
			if q.ID() != got[0].ID() {
				t.Errorf("event about %s sent with webhook-ids %q and %q", id, got[0].ID(), q.ID())
			}
		}
		dups += len(got) - 1
	}
	d.note("%d deliveries for %d events: %d repeated after the kill, same webhook-id (at least once, as documented)", n+dups, n, dups)
	d.losses(eventsListedOnce(t, key, p.GatewayURL, triggers))
	p.noDeaths(t)
}

// eventsListedOnce counts the objects among ids whose created event the event log does not
// list (lost) or lists more than once (doubled).
func eventsListedOnce(t *testing.T, key, gatewayURL string, ids []string) (lost, doubled int) {
	t.Helper()
	var objects []string
	for _, e := range listAll(t, key, gatewayURL+"/v1/events?type=webhook_endpoint.created") {
		objects = append(objects, objectIDOf(e))
	}
	counts, _ := countBy(objects)
	for _, id := range ids {
		switch c := counts[id]; {
		case c == 0:
			lost++
			t.Errorf("the created event of %s is not listed", id)
		case c > 1:
			doubled += c - 1
			t.Errorf("the created event of %s is listed %d times", id, c)
		}
	}
	return lost, doubled
}

// redisBehindProxy returns a Redis of the test's own behind a fault proxy the test can cut
// (the data stays, the network goes), and the URL that reaches it through the proxy.
func redisBehindProxy(t *testing.T) (*faultproxy.Proxy, string) {
	t.Helper()
	redisURL, err := url.Parse(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(redisURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close) // after the stack has stopped (cleanups run last first)
	redisURL.Host = proxy.Addr()
	return proxy, redisURL.String()
}

// Redis is unreachable (a fault proxy cut) while the API is written to: every write keeps
// its event in the outbox and every event arrives after; a POST with an Idempotency-Key is
// refused with 503 (docs/api.md: never run without protection) and succeeds when retried
// after; the rate limiter lets requests through without its headers.
func TestDrillRedisUnreachable(t *testing.T) {
	t.Parallel()
	outage := scale(5*time.Second, 30*time.Second)
	d := newDrill(t, "Redis unreachable during traffic")
	proxy, redisURL := redisBehindProxy(t)
	env := deliveryEnv("1s,2s,3s")
	env["GATEWAY_RATE_LIMIT_TEST"] = "1000" // limits on, far above this load
	p := startWith(t, stackConfig{env: env, redisURL: redisURL})

	rx := receiver.New(t)
	key := p.newKey(t, "acct_redisdown", false)
	p.createEndpoint(t, key, rx.URL()+"/rx", "webhook_endpoint.created")
	warm := p.trigger(t, key)
	rx.WaitUntil(t, "/rx", deliveryWait, "a delivery before the outage", answeredAbout("webhook_endpoint.created", warm))
	if r := call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints?limit=1", key, nil); r.Header.Get("RateLimit-Limit") == "" {
		t.Fatalf("no RateLimit-Limit before the outage: %v", r.Header)
	}

	proxy.Cut()
	cutAt := time.Now()
	d.did("cut Redis off every program for %s while writing", outage)
	var triggers []string
	var slowest time.Duration
	refused, requests := 0, 0
	for i := 0; time.Since(cutAt) < outage; i++ {
		start := time.Now()
		triggers = append(triggers, p.trigger(t, key)) // fails the test unless the write succeeds
		requests++
		if took := time.Since(start); took > slowest {
			slowest = took
		}
		if i%10 == 0 {
			r := callRaw(t, "POST", p.GatewayURL+"/v1/webhook_endpoints", key, fmt.Sprintf(`{"url":%q,"enabled_events":[%q]}`, publicURL, quietType), idem(fmt.Sprintf("drill-redisdown-%d", i)))
			requests++
			if r.Status != 503 || r.errCode() != "service_unavailable" {
				t.Errorf("POST with an Idempotency-Key while Redis is unreachable: %d %s, want 503 service_unavailable", r.Status, r.Raw)
			}
			refused++
			if g := call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints?limit=1", key, nil); g.Status != 200 || g.Header.Get("RateLimit-Limit") != "" {
				t.Errorf("GET while the rate limiter is unreachable: %d, RateLimit-Limit %q; want 200 without the header", g.Status, g.Header.Get("RateLimit-Limit"))
			}
			requests++
		}
	}
	d.count(requests, 1)
	d.did("%d writes acknowledged during the outage (slowest %s), %d POSTs with an Idempotency-Key refused with 503", len(triggers), slowest.Round(time.Millisecond), refused)
	for _, id := range triggers {
		if len(about(rx.Requests("/rx"), "", id)) > 0 {
			t.Fatalf("an event about %s was delivered while Redis was unreachable", id)
		}
	}
	p.noDeaths(t)
	restoredAt := time.Now()
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	d.did("restored Redis")
	// The refused POST runs when retried after a short wait, as its answer says (the gateway's
	// Redis connections come back within seconds).
	retryCtx, retryCancel := context.WithTimeout(context.Background(), 15*time.Second)
	r, tries, err := postUntilApplied(retryCtx, p.GatewayURL+"/v1/webhook_endpoints", key, "drill-redisdown-0", map[string]any{"url": publicURL, "enabled_events": []string{quietType}})
	retryCancel()
	if err != nil || r.Status != 200 {
		t.Errorf("the refused POST retried after the outage: %v %d %s", err, r.Status, r.Raw)
	}
	d.found("the refused POST ran when retried, at try %d", tries)

	// The full form's thousand events come back at 10 to 20 a second on this machine (measured:
	// 888 in 1m35s before the outbox retention, 807 in 57 s after): what is checked is that
	// none is lost, and the time it took is reported.
	rx.WaitUntil(t, "/rx", scale(deliveryWait, 3*time.Minute), "every event written during the outage", func(reqs []receiver.Request) bool {
		for _, id := range triggers {
			if !answeredAbout("webhook_endpoint.created", id)(reqs) {
				return false
			}
		}
		return true
	})
	d.found("all %d events delivered %s after Redis came back", len(triggers), time.Since(restoredAt).Round(100*time.Millisecond))
	d.losses(eventsListedOnce(t, key, p.GatewayURL, append([]string{warm}, triggers...)))
	// The limiter is asked again within a second of Redis answering (docs/api.md).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r := call(t, "GET", p.GatewayURL+"/v1/webhook_endpoints?limit=1", key, nil)
		if r.Header.Get("RateLimit-Limit") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no RateLimit-Limit 5 s after the outage: %v", r.Header)
			break
		}
	}
	p.noDeaths(t)
}
