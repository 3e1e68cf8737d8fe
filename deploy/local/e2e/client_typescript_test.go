package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/libs/eventtype"
)

// needTool returns the path of a program the test needs. Where it is missing the test is
// skipped, saying how to get it, except in CI (CI set), which installs every tool the suite
// uses: there a missing one fails.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (CI installs it: .ci/run)", name)
	}
	missingTools.add("%s (%s)", t.Name(), name)
	t.Skipf("%s is not installed; %s", name, install)
	return ""
}

// missingTools are the tests skipped for a program not installed here, each with the program.
// A run with such skips exercised only part of the contract, like a -run or -short one
// (TestMain).
var missingTools reportLines

// contractProxy is a reverse proxy to a platform's gateway whose requests go through the
// contract's checking transport, reported to t: a program outside this process (node, a
// browser) talks to the platform through it, and is checked like the suite's own requests.
func contractProxy(t *testing.T, gatewayURL string) string {
	t.Helper()
	target, err := url.Parse(gatewayURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			r.Out = r.Out.WithContext(withTest(r.Out.Context(), t))
		},
		Transport: http.DefaultClient.Transport,
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The TypeScript client (clients/typescript: openapi-typescript's types, openapi-fetch) is
// compiled with tsc and its flow (test/flow.ts) run with node against the platform: a webhook
// endpoint, a payment agreement, a payment request collected, its events and their delivery.
// What it made is checked here against what the receiver got, signed.
func TestTypeScriptClientFlow(t *testing.T) {
	npm := needTool(t, "npm", "install Node.js 20 (with npm) to run the TypeScript client's test")
	node := needTool(t, "node", "install Node.js 20 to run the TypeScript client's test")
	dir, err := filepath.Abs("../../../clients/typescript")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(name string, env []string, args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
	// The packages as the lockfile pins them; then the client and its flow, type-checked.
	run(npm, nil, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	run(npm, nil, "run", "--silent", "build")

	p := startWith(t, stackConfig{env: deliveryEnv("1s,2s,3s")})
	t.Cleanup(func() { p.noDeaths(t) })
	key := p.newKey(t, "acct_tsclient", false)
	rx := receiver.New(t)
	out := run(node, []string{
		"RENTAL_API_BASE=" + contractProxy(t, p.GatewayURL),
		"RENTAL_API_KEY=" + key,
		"RENTAL_HOOK_URL=" + rx.URL() + "/hooks",
	}, "dist/test/flow.js")

	var made struct {
		Endpoint, Secret, Charge, Event string
		PaymentRequest                  string `json:"payment_request"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &made); err != nil || made.Event == "" || made.Secret == "" || made.PaymentRequest == "" || made.Charge == "" {
		t.Fatalf("the flow printed %q (%v)", out, err)
	}
	reqs := rx.WaitUntil(t, "/hooks", deliveryWait, "the collection's events", func(rs []receiver.Request) bool {
		return answeredAbout(eventtype.PaymentRequestSucceeded, made.PaymentRequest)(rs) && answeredAbout(eventtype.ChargeSucceeded, made.Charge)(rs)
	})
	for _, q := range reqs {
		if err := verifier(t, made.Secret).Verify(q.Header, q.Body); err != nil {
			t.Fatalf("%s: %v", q.Event().Type, err)
		}
		if q.Event().Type == eventtype.PaymentRequestSucceeded && q.Event().ID != made.Event {
			t.Fatalf("delivered %s, the flow listed %s", q.Event().ID, made.Event)
		}
	}
}
