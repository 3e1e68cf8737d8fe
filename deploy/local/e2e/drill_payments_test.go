package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/eventtype"
)

// paymentsDrillEnv makes a killed attempt's claim stale soon (attempt timeout + 30 s) and
// the reconciler look every 2 s, so the drill waits for recovery in seconds, not minutes.
var paymentsDrillEnv = map[string]string{
	"PAYMENTS_ATTEMPT_TIMEOUT":    "5s",
	"PAYMENTS_RECONCILE_INTERVAL": "2s",
}

// payments-svc is killed (SIGKILL) several times while payment requests are created and
// collected: each request is charged once in the processor's ledger, has its events once
// each, and none stays in processing.
func TestDrillPaymentsKilledDuringCollection(t *testing.T) {
	t.Parallel()
	n, kills := scale(150, 1200), scale(2, 4)
	d := newDrill(t, "payments-svc killed during collection")
	p := startWith(t, stackConfig{env: paymentsDrillEnv})
	key := p.newKey(t, "acct_drillpaykill", false)
	agreement := str(p.createAgreement(t, key, "tok_test_success")["id"])

	ctx, cancel := context.WithTimeout(context.Background(), scale(3*time.Minute, 10*time.Minute))
	defer cancel()
	c := p.createRequests(ctx, key, agreement, "drill-paykill", n)
	// The kills are spread over the creates, so each meets requests being created, charged
	// and recorded.
	for k := 1; k <= kills; k++ {
		for c.acked.Load() < int64(k*n/(kills+1)) && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		if err := p.Kill("payments-svc"); err != nil {
			t.Fatal(err)
		}
		d.did("SIGKILL of payments-svc #%d with %d of %d requests acknowledged", k, c.acked.Load(), n)
		time.Sleep(300 * time.Millisecond)
		if err := p.Restart(ctx, "payments-svc"); err != nil {
			t.Fatalf("restarting payments-svc: %v", err)
		}
	}
	ids := c.wait(t)
	d.count(int(c.tries.Load()), kills)
	d.did("%d payment requests acknowledged, in %d POSTs (retries with the same Idempotency-Key through the kills)", n, c.tries.Load())

	// Every request ends succeeded: the reconciler takes over the attempts the kills cut.
	deadline := time.Now().Add(scale(3*time.Minute, 5*time.Minute))
	var listed []map[string]any
	byStatus := map[string]int{}
	for {
		listed = listAll(t, key, p.GatewayURL+"/v1/payment_requests")
		clear(byStatus)
		for _, r := range listed {
			byStatus[str(r["status"])]++
		}
		if byStatus["pending"]+byStatus["processing"] == 0 || time.Now().After(deadline) {
			d.found("%d requests listed, by status %v", len(listed), byStatus)
			break
		}
		time.Sleep(time.Second)
	}
	// A logical create is one amount (1000+i): more than one request for it is a create doubled.
	perAmount := map[int]int{}
	for _, r := range listed {
		perAmount[int(num(r["amount"]))]++
	}
	doubledRequests := 0
	for amount, c := range perAmount {
		if c > 1 {
			doubledRequests += c - 1
			t.Errorf("%d payment requests of amount %d: created %d times through retries with one Idempotency-Key", c, amount, c)
		}
	}
	if byStatus["succeeded"] != len(listed) {
		t.Errorf("requests by status %v: want all succeeded", byStatus)
	}

	// The processor's ledger: one charge per request, succeeded.
	cur, err := p.storeDB(t, "payments_simulator").Collection("simulated_charges").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var charges []struct {
		Request   string `bson:"request"`
		Amount    int    `bson:"amount"`
		Succeeded bool   `bson:"succeeded"`
	}
	if err := cur.All(ctx, &charges); err != nil {
		t.Fatal(err)
	}
	chargedIDs := make([]string, 0, len(charges))
	chargedAmounts := make([]string, 0, len(charges))
	for _, c := range charges {
		chargedIDs = append(chargedIDs, c.Request)
		chargedAmounts = append(chargedAmounts, fmt.Sprint(c.Amount))
		if !c.Succeeded {
			t.Errorf("a charge of %s failed with the success token", c.Request)
		}
	}
	charged, _ := countBy(chargedIDs)
	// A tenant charged twice for one logical request (one amount), whatever the request ids.
	_, doubledCharges := countBy(chargedAmounts)
	if doubledCharges > 0 {
		t.Errorf("%d charges doubled for one logical payment request", doubledCharges)
	}
	lost := 0
	for _, id := range ids {
		if charged[id] == 0 {
			lost++
			t.Errorf("%s was never charged", id)
		}
	}
	d.found("%d charges in the processor's ledger for %d requests", len(charges), n)

	// Each request's events, once each, in the event log.
	doubledEvents, lostEvents := 0, 0
	for _, typ := range []string{eventtype.PaymentRequestCreated, eventtype.PaymentRequestProcessing, eventtype.PaymentRequestSucceeded, eventtype.ChargeSucceeded} {
		var objects []string
		wait := time.Now().Add(deliveryWait)
		for {
			objects = objects[:0]
			for _, e := range listAll(t, key, p.GatewayURL+"/v1/events?type="+typ) {
				id := objectIDOf(e)
				if typ == eventtype.ChargeSucceeded {
					obj, _ := e["data"].(map[string]any)["object"].(map[string]any)
					id = idOf(obj["payment_request"])
				}
				objects = append(objects, id)
			}
			if len(objects) >= n || time.Now().After(wait) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		counts, doubled := countBy(objects)
		doubledEvents += doubled
		for _, id := range ids {
			if counts[id] == 0 {
				lostEvents++
				t.Errorf("no %s event for %s", typ, id)
			}
		}
		if doubled > 0 {
			t.Errorf("%d %s events doubled", doubled, typ)
		}
		d.found("%d %s events for %d requests", len(objects), typ, n)
	}
	d.losses(lost+lostEvents, doubledRequests+doubledCharges+doubledEvents)
	p.noDeaths(t)
}

// creates are payment requests being created by 8 clients, each POST retried with its
// Idempotency-Key until applied, as a careful client does through a fault.
type creates struct {
	ids          []string
	acked, tries atomic.Int64
	wg           sync.WaitGroup
	errs         chan error
}

// createRequests starts creating n payment requests against agreement, request i of amount
// 1000+i (so a request created twice shows as two of one amount) under the key prefix-i.
func (p *platform) createRequests(ctx context.Context, key, agreement, prefix string, n int) *creates {
	c := &creates{ids: make([]string, n), errs: make(chan error, n)}
	var next atomic.Int64
	for range 8 {
		c.wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				body := map[string]any{"payment_agreement": agreement, "amount": 1000 + i, "currency": "eur", "description": fmt.Sprintf("drill %d", i)}
				res, k, err := postUntilApplied(ctx, p.GatewayURL+"/v1/payment_requests", key, fmt.Sprintf("%s-%d", prefix, i), body)
				c.tries.Add(int64(k))
				if err == nil && res.Status != 200 {
					err = fmt.Errorf("payment request %d: %d %s", i, res.Status, res.Raw)
				}
				if err != nil {
					c.errs <- err
					return
				}
				c.ids[i] = str(res.Body["id"])
				c.acked.Add(1)
			}
		})
	}
	return c
}

// wait returns the requests' ids once every create is acknowledged, and fails the test on the
// first that could not be.
func (c *creates) wait(t *testing.T) []string {
	t.Helper()
	c.wg.Wait()
	close(c.errs)
	for err := range c.errs {
		t.Fatal(err)
	}
	return c.ids
}

// Redis is flushed while payment retries and session expiries are scheduled in it: the
// payments reconciler and the verification expiry sweep restore every one; no charge twice,
// no expiry missed.
func TestDrillRedisFlushedWithScheduledWork(t *testing.T) {
	t.Parallel()
	n := scale(100, 1000)
	d := newDrill(t, "Redis flushed with scheduled work")
	// Sessions expire well after the creates and the flush, so each expiry is scheduled in
	// Redis when the flush comes.
	ttl := scale(40*time.Second, 4*time.Minute)
	env := verificationEnv("VERIFICATION_SESSION_TTL", ttl.String(), "VERIFICATION_EXPIRY_SWEEP_INTERVAL", "2s")
	for k, v := range paymentsDrillEnv {
		env[k] = v
	}
	_, redisURL := redisBehindProxy(t) // a Redis of the drill's own, which it may flush
	p := startWith(t, stackConfig{env: env, redisURL: redisURL})
	key := p.newKey(t, "acct_drillflush", false)
	agreement := str(p.createAgreement(t, key, "tok_test_succeed_from_attempt_2")["id"])

	ctx, cancel := context.WithTimeout(context.Background(), scale(4*time.Minute, 20*time.Minute))
	defer cancel()
	requests, sessions := make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= 2*n {
					return
				}
				var res response
				var err error
				if i%2 == 0 {
					body := map[string]any{"payment_agreement": agreement, "amount": 500 + i, "currency": "eur"}
					res, _, err = postUntilApplied(ctx, p.GatewayURL+"/v1/payment_requests", key, fmt.Sprintf("drill-flush-pr-%d", i), body)
				} else {
					res, _, err = postUntilApplied(ctx, p.GatewayURL+"/v1/verification_sessions", key, fmt.Sprintf("drill-flush-vs-%d", i), sessionBody("drill@example.com", nil))
				}
				if err == nil && res.Status != 200 {
					err = fmt.Errorf("create %d: %d %s", i, res.Status, res.Raw)
				}
				if err != nil {
					errs <- err
					return
				}
				if i%2 == 0 {
					requests[i/2] = str(res.Body["id"])
				} else {
					sessions[i/2] = str(res.Body["id"])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d.count(2*n, 1)
	d.did("created %d payment requests (attempt 1 fails, attempt 2 due in 24 h) and %d sessions (expiring in %s)", n, n, ttl)

	// Wait until every request has failed attempt 1 and holds its retry in Redis.
	opt, err := redis.ParseURL(p.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	scheduledRetries := func() int {
		held := 0
		for _, id := range requests {
			if _, err := rdb.ZScore(ctx, "asynq:{payments}:scheduled", id+":2").Result(); err == nil {
				held++
			}
		}
		return held
	}
	deadline := time.Now().Add(scale(time.Minute, 3*time.Minute))
	for scheduledRetries() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d retries scheduled in Redis after %s", scheduledRetries(), n, time.Minute)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The flush is to take scheduled work only: the events of the creates are stored first (an
	// event still queued when Redis loses its data is lost with it, the gap the launcher drill
	// shows), and no session has expired yet.
	for drained := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		queued, err := rdb.LLen(ctx, "asynq:{events}:pending").Result()
		active, err2 := rdb.LLen(ctx, "asynq:{events}:active").Result()
		if err == nil && err2 == nil && queued+active == 0 {
			break
		}
		if time.Now().After(drained) {
			t.Fatalf("the events queue still holds %d pending and %d active tasks after 2 minutes (%v, %v)", queued, active, err, err2)
		}
	}
	expiries, err := rdb.ZCard(ctx, "asynq:{verification}:scheduled").Result()
	if err != nil {
		t.Fatal(err)
	}
	if expiries != int64(n) {
		t.Fatalf("%d of %d session expiries scheduled before the flush (the sessions' TTL, %s, is too short for this machine)", expiries, n, ttl)
	}
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("FLUSHDB: %v", err)
	}
	flushedAt := time.Now()
	d.did("FLUSHDB with %d payment retries and %d session expiries scheduled", n, expiries)

	// The reconciler queues every retry again for its time.
	deadline = time.Now().Add(time.Minute)
	for held := scheduledRetries(); held < n; held = scheduledRetries() {
		if time.Now().After(deadline) {
			t.Errorf("%d of %d payment retries back in Redis a minute after the flush", held, n)
			d.losses(n-held, 0)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	d.found("every payment retry back in Redis %s after the flush", time.Since(flushedAt).Round(100*time.Millisecond))

	// Run attempt 2 of each now (the test helper, 8 at a time): one more charge each, never two.
	var advanced sync.WaitGroup
	var nextAdvance atomic.Int64
	for range 8 {
		advanced.Go(func() {
			for i := int(nextAdvance.Add(1) - 1); i < n; i = int(nextAdvance.Add(1) - 1) {
				u := p.GatewayURL + "/v1/test_helpers/payment_requests/" + requests[i] + "/advance"
				res, err := send(ctx, "POST", u, key, nil, nil)
				if err != nil || res.Status != 200 || res.Body["status"] != "succeeded" || num(res.Body["attempts"]) != 2 {
					t.Errorf("advance %s after the flush: %v %d %s", requests[i], err, res.Status, res.Raw)
					return
				}
			}
		})
	}
	advanced.Wait()
	if t.Failed() {
		t.FailNow()
	}
	cur, err := p.storeDB(t, "payments_simulator").Collection("simulated_charges").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var charges []struct {
		Request string `bson:"request"`
		Attempt int    `bson:"attempt"`
	}
	if err := cur.All(ctx, &charges); err != nil {
		t.Fatal(err)
	}
	perAttempt := make([]string, 0, len(charges))
	for _, c := range charges {
		perAttempt = append(perAttempt, fmt.Sprintf("%s:%d", c.Request, c.Attempt))
	}
	counts, doubledCharges := countBy(perAttempt)
	lostCharges := 0
	for _, id := range requests {
		for a := 1; a <= 2; a++ {
			if counts[fmt.Sprintf("%s:%d", id, a)] == 0 {
				lostCharges++
			}
		}
	}
	d.found("%d charges in the ledger for %d requests × 2 attempts", len(charges), n)

	// Every session expires once, though its task was flushed: the sweep finds it.
	var expired []string
	wait := time.Until(flushedAt.Add(ttl)) + scale(time.Minute, 2*time.Minute)
	end := time.Now().Add(wait)
	for {
		expired = expired[:0]
		for _, e := range listAll(t, key, p.GatewayURL+"/v1/events?type=verification_session.expired") {
			expired = append(expired, objectIDOf(e))
		}
		if len(expired) >= n || time.Now().After(end) {
			break
		}
		time.Sleep(time.Second)
	}
	expCounts, doubledExpiries := countBy(expired)
	missed := 0
	for _, id := range sessions {
		if expCounts[id] == 0 {
			missed++
			got := call(t, "GET", p.GatewayURL+"/v1/verification_sessions/"+id, key, nil)
			t.Errorf("session %s has no expired event; it is %v", id, got.Body["status"])
		}
	}
	d.found("%d expired events for %d sessions (%d missed)", len(expired), n, missed)
	d.losses(lostCharges+missed, doubledCharges+doubledExpiries)
	p.noDeaths(t)
}
