package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/libs/eventtype"
)

// Three replicas each of payments-svc and webhooks-svc on one MongoDB, payment requests
// collected while one payments-svc replica is killed: no request charged twice, every
// payment_request.succeeded delivered exactly once (no delivery doubled by two replicas).
//
// Only on a real MongoDB (MONGODB_URI): the embedded FerretDB's conditional writes are made
// atomic by a gate inside the one process that hosts it (docs/architecture.md), which replicas
// in other processes do not share. DRILLS_REPLICAS_EMBEDDED=1 runs it on the embedded store
// anyway, to check the drill itself; its figures then say nothing about the platform.
func TestDrillReplicasOnMongoDB(t *testing.T) {
	if os.Getenv("MONGODB_URI") == "" && os.Getenv("DRILLS_REPLICAS_EMBEDDED") != "1" {
		t.Skip("drill of three replicas per service: needs MONGODB_URI (a real MongoDB); the embedded store serves one process of each service")
	}
	t.Parallel()
	n := scale(100, 1000)
	d := newDrill(t, "3 replicas of payments-svc and webhooks-svc")
	p := startWith(t, stackConfig{env: merged(deliveryEnv("1s,2s,3s"), paymentsDrillEnv)})
	ctx, cancel := context.WithTimeout(context.Background(), scale(4*time.Minute, 10*time.Minute))
	defer cancel()
	for _, svc := range []string{"payments-svc", "webhooks-svc"} {
		for range 2 {
			name, err := p.StartReplica(ctx, svc)
			if err != nil {
				t.Fatalf("replica of %s: %v", svc, err)
			}
			d.did("started %s", name)
		}
	}
	rx := receiver.New(t)
	key := p.newKey(t, "acct_drillreplicas", false)
	p.createEndpoint(t, key, rx.URL()+"/rx", eventtype.PaymentRequestSucceeded)
	agreement := str(p.createAgreement(t, key, "tok_test_success")["id"])

	c := p.createRequests(ctx, key, agreement, "drill-replicas", n)
	for c.acked.Load() < int64(n/2) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Kill("payments-svc#2"); err != nil {
		t.Fatal(err)
	}
	d.did("SIGKILL of payments-svc#2 with %d of %d requests acknowledged", c.acked.Load(), n)
	ids := c.wait(t)
	d.count(n, 1)

	// Every request's success delivered, exactly once.
	reqs := rx.WaitUntil(t, "/rx", scale(3*time.Minute, 6*time.Minute), "every request's success delivered", func(reqs []receiver.Request) bool {
		for _, id := range ids {
			if !answeredAbout(eventtype.PaymentRequestSucceeded, id)(reqs) {
				return false
			}
		}
		return true
	})
	deliveries := make([]string, 0, len(reqs))
	for _, q := range reqs {
		deliveries = append(deliveries, q.ID())
	}
	_, doubledDeliveries := countBy(deliveries)
	d.found("%d deliveries of %d payment_request.succeeded events", len(reqs), n)

	cur, err := p.storeDB(t, "payments_simulator").Collection("simulated_charges").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var charges []struct {
		Amount int `bson:"amount"`
	}
	if err := cur.All(ctx, &charges); err != nil {
		t.Fatal(err)
	}
	amounts := make([]string, 0, len(charges))
	for _, c := range charges {
		amounts = append(amounts, fmt.Sprint(c.Amount))
	}
	_, doubledCharges := countBy(amounts)
	d.found("%d charges in the ledger for %d requests", len(charges), n)
	d.losses(0, doubledDeliveries+doubledCharges)
}

// merged is the union of maps, later ones winning.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
