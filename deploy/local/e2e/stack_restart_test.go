package e2e

import (
	"context"
	"testing"
	"time"
)

// The fault tests rely on stack.Kill and stack.Restart: a killed program is not an unexpected
// death, and it comes back on the same address with its data, so the gateway finds it again.
func TestStackKillAndRestart(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{})
	key := p.newKey(t, "acct_restart", false)
	id, _ := p.createEndpoint(t, key, publicURL, quietType)
	u := p.GatewayURL + "/v1/webhook_endpoints/" + id
	serviceURL := p.ServiceURLs["webhooks-svc"]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := p.Restart(ctx, "webhooks-svc"); err == nil {
		t.Fatal("Restart of a running program succeeded")
	}
	if err := p.Kill("webhooks-svc"); err != nil {
		t.Fatal(err)
	}
	res := waitStatus(t, key, u, 502, 10*time.Second)
	if res.errCode() != "upstream_unavailable" {
		t.Fatalf("while killed: %d %s", res.Status, res.Raw)
	}
	select {
	case err := <-p.Died():
		t.Fatalf("a killed program was reported as an unexpected exit: %v", err)
	case <-time.After(500 * time.Millisecond):
	}

	if err := p.Restart(ctx, "webhooks-svc"); err != nil {
		t.Fatal(err)
	}
	if p.ServiceURLs["webhooks-svc"] != serviceURL {
		t.Fatalf("service URL changed: %s -> %s", serviceURL, p.ServiceURLs["webhooks-svc"])
	}
	if res := call(t, "GET", u, key, nil); res.Status != 200 || res.Body["id"] != id {
		t.Fatalf("after restart: %d %s", res.Status, res.Raw)
	}

	// Twice, and the gateway too: its public address stays the same.
	for _, name := range []string{"webhooks-svc", "gateway"} {
		if err := p.Kill(name); err != nil {
			t.Fatal(err)
		}
		if err := p.Restart(ctx, name); err != nil {
			t.Fatalf("restart %s: %v", name, err)
		}
	}
	if res := call(t, "GET", u, key, nil); res.Status != 200 || res.Body["id"] != id {
		t.Fatalf("after the second restarts: %d %s", res.Status, res.Raw)
	}

	// RestartEnv changes a variable for one start only.
	if err := p.Kill("webhooks-svc"); err != nil {
		t.Fatal(err)
	}
	if err := p.RestartEnv(ctx, "webhooks-svc", map[string]string{"LOG_LEVEL": "debug"}); err != nil {
		t.Fatal(err)
	}
	if res := call(t, "GET", u, key, nil); res.Status != 200 {
		t.Fatalf("after RestartEnv: %d %s", res.Status, res.Raw)
	}
	if err := p.Kill("nothing-svc"); err == nil {
		t.Fatal("Kill of an unknown program succeeded")
	}
	p.noDeaths(t)
}
