package e2e

// Issue 4 end to end: idempotency keys through the gateway and the real services.

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

func idem(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }

func (r response) errType() string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

func TestGatewayIdempotencyEndToEnd(t *testing.T) {
	p := start(t)
	key := p.newKey(t, "acct_idem", false)
	base := p.GatewayURL + "/v1/webhook_endpoints"

	var createdID, createdReq string
	t.Run("replay returns the identical body with Idempotent-Replayed", func(t *testing.T) {
		body := fmt.Sprintf(`{"url":%q,"enabled_events":[%q],"description":"idem create","metadata":{"a":"1","b":"2"}}`, publicURL, quietType)
		first := callRaw(t, "POST", base, key, body, idem("create-1"))
		if first.Status != 200 || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("create: %d %s", first.Status, first.Raw)
		}
		createdID, _ = first.Body["id"].(string)
		createdReq = first.Header.Get("Request-Id")
		// The same parameters, keys in another order: the stored answer, secret included.
		reordered := fmt.Sprintf(`{"metadata":{"b":"2","a":"1"},"description":"idem create","enabled_events":[%q],"url":%q}`, quietType, publicURL)
		again := callRaw(t, "POST", base, key, reordered, idem("create-1"))
		if again.Status != 200 || !bytes.Equal(again.Raw, first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" ||
			again.Header.Get("Original-Request") != createdReq {
			t.Fatalf("replay: %d %v\n%s\nwant\n%s", again.Status, again.Header, again.Raw, first.Raw)
		}
		n := 0
		for _, e := range listAll(t, key, base) {
			if e["description"] == "idem create" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d endpoints exist, want 1", n)
		}
	})

	t.Run("the event of the idempotent create carries the key", func(t *testing.T) {
		ev := p.waitEvent(t, key, "webhook_endpoint.created", createdID, 30*time.Second)
		req, _ := ev["request"].(map[string]any)
		if req["idempotency_key"] != "create-1" || req["id"] != createdReq {
			t.Fatalf("event request = %v, want id %s and idempotency_key create-1", req, createdReq)
		}
	})

	t.Run("same key with other parameters is 400", func(t *testing.T) {
		body := fmt.Sprintf(`{"url":%q,"enabled_events":[%q],"description":"something else"}`, publicURL, quietType)
		res := callRaw(t, "POST", base, key, body, idem("create-1"))
		if res.Status != 400 || res.errType() != "idempotency_error" || res.errCode() != "idempotency_key_reused" {
			t.Fatalf("mismatch: %d %s", res.Status, res.Raw)
		}
		res = callRaw(t, "POST", base+"/"+createdID, key, `{"description":"x"}`, idem("create-1"))
		if res.Status != 400 || res.errCode() != "idempotency_key_reused" {
			t.Fatalf("other path: %d %s", res.Status, res.Raw)
		}
	})

	t.Run("concurrent requests with one key: one runs, the others 409", func(t *testing.T) {
		// A request still running is what a 409 needs; with fast services a round may finish
		// before the others arrive (they then get the replay), so a few rounds are allowed.
		saw409 := false
		for round := 0; round < 10 && !saw409; round++ {
			k := fmt.Sprintf("conc-%d", round)
			desc := "concurrent " + k
			body := fmt.Sprintf(`{"url":%q,"enabled_events":[%q],"description":%q}`, publicURL, quietType, desc)
			const n = 8
			results := make([]response, n)
			var wg sync.WaitGroup
			startGun := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-startGun
					results[i] = callRaw(t, "POST", base, key, body, idem(k))
				}(i)
			}
			close(startGun)
			wg.Wait()
			ran, replayed, inUse := 0, 0, 0
			for _, r := range results {
				switch {
				case r.Status == 200 && r.Header.Get("Idempotent-Replayed") == "true":
					replayed++
				case r.Status == 200:
					ran++
				case r.Status == 409 && r.errType() == "idempotency_error" && r.errCode() == "idempotency_key_in_use":
					inUse++
				default:
					t.Fatalf("unexpected answer: %d %s", r.Status, r.Raw)
				}
			}
			if ran != 1 || ran+replayed+inUse != n {
				t.Fatalf("round %d: %d ran, %d replayed, %d in use; want exactly one run", round, ran, replayed, inUse)
			}
			created := 0
			for _, e := range listAll(t, key, base) {
				if e["description"] == desc {
					created++
				}
			}
			if created != 1 {
				t.Fatalf("round %d: %d endpoints created, want 1", round, created)
			}
			saw409 = inUse > 0
		}
		if !saw409 {
			t.Fatal("no 409 in 10 rounds of 8 concurrent requests")
		}
	})
}
