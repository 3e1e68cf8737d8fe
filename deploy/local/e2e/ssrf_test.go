package e2e

// The SSRF guard (issue 3 §3) with the guard on, as in any real deployment.
//
// What can be tested offline, and how:
//   - create and update: every private, loopback, link-local, CGNAT, unique-local, multicast,
//     unspecified and IPv4-mapped form, IP literals in their odd spellings, and localhost names,
//     are refused with 400 (no DNS needed: they are literals or reserved names);
//   - a name that resolves to 127.0.0.1: the machine's own name or another /etc/hosts name
//     resolving only to loopback (found at run time; skipped when there is none), pointed at
//     the receiver's port. Public names such as localtest.me need DNS, which tests cannot rely
//     on. It must be refused at creation, or else (if names are not resolved then) its
//     delivery must be refused by the dialer: certificate checks are off and the receiver is
//     listening there, so only the guard can stop it;
//   - the dial-time check against DNS rebinding proper (a name resolving publicly at creation
//     and privately at dial time) needs a DNS server the service would ask, which the tests
//     cannot point it at. Besides the /etc/hosts name above, the dialer is reached with a
//     literal address too: an endpoint on 127.0.0.1 stored while the guard was lifted
//     (webhooks-svc restarted with WEBHOOKS_ALLOW_PRIVATE=true), then delivered to with the
//     guard on again;
//   - a redirect to a private address is not followed: with the guard on the receiver on
//     127.0.0.1 cannot be registered at all, so TestWebhookDelivery checks, with the guard
//     lifted, that redirects are never followed (which covers private targets a fortiori).

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/libs/servicetest"
)

func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: map[string]string{
		"WEBHOOKS_RETRY_SCHEDULE": "1s,2s,3s",
		"WEBHOOKS_ALLOW_PRIVATE":  "false",
		"WEBHOOKS_TLS_INSECURE":   "true",
	}})
	key := p.newKey(t, "acct_ssrf", false)
	base := p.GatewayURL + "/v1/webhook_endpoints"

	refused := []string{
		// IPv4 loopback in every spelling a resolver or browser accepts.
		"https://127.0.0.1/hooks",
		"https://127.0.0.1:8443/hooks",
		"https://127.1.2.3/hooks",
		"https://2130706433/hooks", // decimal
		"https://0x7f000001/hooks", // hexadecimal
		"https://0177.0.0.1/hooks", // octal
		"https://127.1/hooks",      // short form
		// Unspecified, private, link-local (the metadata service), CGNAT, multicast, broadcast.
		"https://0.0.0.0/hooks",
		"https://0/hooks",
		"https://10.0.0.1/hooks",
		"https://172.16.0.1/hooks",
		"https://192.168.1.1/hooks",
		"https://169.254.169.254/latest/meta-data",
		"https://100.64.0.1/hooks",
		"https://224.0.0.1/hooks",
		// IPv6: loopback, unspecified, IPv4-mapped, unique-local, link-local, multicast.
		"https://[::1]/hooks",
		"https://[0:0:0:0:0:0:0:1]/hooks",
		"https://[::]/hooks",
		"https://[::ffff:127.0.0.1]/hooks",
		"https://[::ffff:7f00:1]/hooks",
		"https://[::ffff:169.254.169.254]/hooks",
		"https://[::ffff:10.0.0.1]/hooks",
		"https://[fc00::1]/hooks",
		"https://[fd12:3456:789a::1]/hooks",
		"https://[fe80::1]/hooks",
		"https://[fe80::1%25eth0]/hooks",
		"https://[ff02::1]/hooks",
		// Names.
		"https://localhost/hooks",
		"https://LOCALHOST/hooks",
		"https://localhost./hooks",
		"https://localhost:8443/hooks",
		"https://api.localhost/hooks", // RFC 6761: *.localhost is loopback
	}

	t.Run("refused at creation", func(t *testing.T) {
		for _, u := range refused {
			res := call(t, "POST", base, key, map[string]any{"url": u, "enabled_events": []string{"*"}})
			if res.Status != 400 || res.errParam() != "url" {
				t.Errorf("create %s: %d %s, want 400 on url", u, res.Status, res.Raw)
			}
		}
	})

	t.Run("refused at update", func(t *testing.T) {
		id, _ := p.createEndpoint(t, key, publicURL, quietType)
		for _, u := range refused {
			res := call(t, "POST", base+"/"+id, key, map[string]any{"url": u})
			if res.Status != 400 || res.errParam() != "url" {
				t.Errorf("update to %s: %d %s, want 400 on url", u, res.Status, res.Raw)
			}
		}
		if res := call(t, "GET", base+"/"+id, key, nil); res.Body["url"] != publicURL {
			t.Errorf("the url changed: %s", res.Raw)
		}
	})

	t.Run("public addresses are accepted", func(t *testing.T) {
		for _, u := range []string{publicURL, "https://93.184.215.14:8443/x", "https://[2606:4700:4700::1111]/hooks"} {
			res := call(t, "POST", base, key, map[string]any{"url": u, "enabled_events": []string{quietType}})
			if res.Status != 200 {
				t.Errorf("create %s: %d %s", u, res.Status, res.Raw)
			}
		}
	})

	t.Run("a name resolving to 127.0.0.1 is refused at creation or at dial time", func(t *testing.T) {
		name := servicetest.LoopbackName()
		if name == "" {
			t.Skip("no name other than localhost resolves only to loopback on this machine (hostname, /etc/hosts)")
		}
		rx := receiver.New(t)
		_, port, _ := strings.Cut(rx.Addr(), ":")
		u := "https://" + name + ":" + port + "/named"
		res := call(t, "POST", base, key, map[string]any{"url": u, "enabled_events": []string{"webhook_endpoint.created"}})
		switch {
		case res.Status == 400 && res.errParam() == "url":
			t.Logf("%s (resolves to loopback here) refused at creation", u)
			return
		case res.Status != 200:
			t.Fatalf("create %s: %d %s", u, res.Status, res.Raw)
		}
		// Accepted as a name: the dialer must refuse the address it resolves to, which is
		// what defends against DNS rebinding. Certificate checks are off, so only the guard
		// can stop this delivery.
		t.Logf("%s (resolves to loopback here) accepted at creation; checking the dialer", u)
		ep, _ := res.Body["id"].(string)
		trig := p.trigger(t, key)
		evt := p.waitEvent(t, key, "webhook_endpoint.created", trig, deliveryWait)
		evtID, _ := evt["id"].(string)
		d := p.waitDelivery(t, key, evtID, ep, deliveryWait, "attempted", func(d map[string]any) bool { return len(attempts(d)) > 0 })
		if n := rx.Count("/named"); n > 0 {
			t.Fatalf("delivered to %s, which resolves to loopback, with the guard on (%d requests)", u, n)
		}
		if d["status"] == "succeeded" || attemptStatus(attempts(d)[0]) != 0 {
			t.Fatalf("delivery to a name resolving to loopback: %v", d)
		}
		t.Logf("refused attempt as recorded: %v", attempts(d)[0])
		refusalHidesAddress(t, d, port)
	})

	t.Run("checked again at dial time", func(t *testing.T) {
		rx := receiver.New(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		restart := func(env map[string]string) {
			t.Helper()
			if err := p.Kill("webhooks-svc"); err != nil {
				t.Fatal(err)
			}
			if err := p.RestartEnv(ctx, "webhooks-svc", env); err != nil {
				t.Fatal(err)
			}
		}
		// Store an endpoint on 127.0.0.1 while the guard is lifted…
		restart(map[string]string{"WEBHOOKS_ALLOW_PRIVATE": "true"})
		ep, _ := p.createEndpoint(t, key, rx.URL()+"/planted", "webhook_endpoint.created")
		// …and deliver to it with the guard on.
		restart(nil)
		trig := p.trigger(t, key)
		evt := p.waitEvent(t, key, "webhook_endpoint.created", trig, deliveryWait)
		evtID, _ := evt["id"].(string)
		d := p.waitDelivery(t, key, evtID, ep, deliveryWait, "attempted", func(d map[string]any) bool { return len(attempts(d)) > 0 })
		if n := len(about(rx.Requests("/planted"), "", trig)); n > 0 {
			t.Fatalf("delivered to 127.0.0.1 with the guard on (%d requests)", n)
		}
		if d["status"] == "succeeded" {
			t.Fatalf("delivery to a private address succeeded: %v", d)
		}
		a := attempts(d)[0]
		if attemptStatus(a) != 0 {
			t.Errorf("the refused attempt has a response status: %v", a)
		}
		t.Logf("refused attempt as recorded: %v", a)
		if errText := attemptError(a); errText == "" || strings.Contains(strings.ToLower(errText), "certificate") {
			t.Errorf("attempt error %q: want the guard's refusal", errText)
		}
		_, port, _ := strings.Cut(rx.Addr(), ":")
		refusalHidesAddress(t, d, port)
	})
	p.noDeaths(t)
}

// refusalHidesAddress checks that a delivery refused by the guard says so by its category and
// shows nothing of the address the endpoint's name resolved to (issue 10 §2): no IP address,
// no port, none of Go's resolver or dialer wording, anywhere in the delivery.
func refusalHidesAddress(t *testing.T, d map[string]any, port string) {
	t.Helper()
	for _, a := range attempts(d) {
		if a["error_code"] != "address_not_allowed" {
			t.Errorf("attempt %v: want error_code address_not_allowed", a)
		}
	}
	raw, _ := json.Marshal(d)
	// A port in the JSON's own "key":value has a quote before the colon; a leaked host:port
	// does not.
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|dial tcp|(?i)\blookup\b|no such host`),
		regexp.MustCompile(`[^"]:` + regexp.QuoteMeta(port) + `\b`),
	} {
		if m := re.Find(raw); m != nil {
			t.Errorf("the delivery shows %q: %s", m, raw)
		}
	}
}
