package e2e

// Helpers of the event and delivery tests (issue 3): a stack started with extra settings, and
// small clients for the events and deliveries API.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/deploy/local/stack"
	"rentalplatform/embedded/testkit"
)

// stackConfig is what a test changes from `start`'s defaults.
type stackConfig struct {
	env        map[string]string            // on top of PATH, HOME, LOG_LEVEL=warn
	programEnv map[string]map[string]string // per program
	// redisURL, when set, is used instead of the embedded (or REDIS_URL) Redis: a test puts a
	// fault proxy in front of its own Redis.
	redisURL string
	// mongoURI, when set, is the store instead of the embedded one (or MONGODB_URI): a drill
	// puts a fault proxy between a program and it.
	mongoURI string
}

// deliveryEnv is the webhooks-svc configuration of the delivery tests: a short retry
// schedule, and the private-address guard and certificate checks lifted so the platform can
// deliver to a receiver on 127.0.0.1 with a self-signed certificate.
func deliveryEnv(schedule string) map[string]string {
	return map[string]string{
		"WEBHOOKS_RETRY_SCHEDULE": schedule,
		"WEBHOOKS_ALLOW_PRIVATE":  "true",
		"WEBHOOKS_TLS_INSECURE":   "true",
	}
}

// gatewayLimitsOff turns the gateway's rate limits off (0 = unlimited).
var gatewayLimitsOff = map[string]string{
	"GATEWAY_RATE_LIMIT_TEST":    "0",
	"GATEWAY_RATE_LIMIT_LIVE":    "0",
	"GATEWAY_AUTH_FAILURE_LIMIT": "0",
}

// startWith is `start` with settings; each call is an independent stack.
func startWith(t *testing.T, cfg stackConfig) *platform {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and starts the whole stack")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "LOG_LEVEL": "warn"}
	// The gateway's rate limits are off unless a test sets them (the gateway_ratelimit
	// tests): these tests fire requests faster than test mode's default 25 a second.
	for k, v := range gatewayLimitsOff {
		env[k] = v
	}
	for k, v := range cfg.env {
		env[k] = v
	}
	opts := stack.Options{
		RepoRoot:    root,
		DataDir:     t.TempDir(),
		GatewayAddr: "127.0.0.1:0",
		AdminAddr:   "127.0.0.1:0",
		Env:         env,
		ProgramEnv:  cfg.programEnv,
		Programs:    programs.folder(t, root),
	}
	// As `make run`: embedded stores unless real ones are configured. A real server is shared
	// with other test binaries, so each stack gets its own databases.
	if uri := os.Getenv("MONGODB_URI"); uri != "" {
		opts.MongoURI = uri
		opts.DatabasePrefix = fmt.Sprintf("e2e_%d_", time.Now().UnixNano())
	}
	if cfg.mongoURI != "" {
		opts.MongoURI = cfg.mongoURI
	}
	switch {
	case cfg.redisURL != "":
		opts.RedisURL = cfg.redisURL
	case os.Getenv("REDIS_URL") != "":
		opts.RedisURL = testkit.Redis(t)
	}
	logs := &syncBuffer{}
	opts.Output = logs
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting the stack: %v\n%s", err, logs.String())
	}
	registerGateway(t, st.GatewayURL, st.AdminURL)
	t.Cleanup(func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stopping the stack: %v", err)
		}
		if t.Failed() {
			t.Logf("stack logs:\n%s", tail(logs.String(), 400))
		}
	})
	return &platform{Stack: st, logs: logs}
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return fmt.Sprintf("… %d lines before …\n", len(lines)-n) + strings.Join(lines[len(lines)-n:], "\n")
}

// noDeaths fails the test if a program of the stack exited unexpectedly.
func (p *platform) noDeaths(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.Died():
		t.Fatalf("stack: %v", err)
	default:
	}
}

// publicURL is an endpoint URL the guard accepts without any DNS lookup; nothing answers it
// here, so tests subscribe such endpoints to a type that never fires in them.
const publicURL = "https://8.8.8.8/hooks"

// quietType is an event type nothing emits in these tests (no payments-svc traffic).
const quietType = "payment_request.failed"

// createEndpoint creates a webhook endpoint and returns its id and signing secret.
func (p *platform) createEndpoint(t *testing.T, key, u string, events ...string) (string, string) {
	t.Helper()
	res := call(t, "POST", p.GatewayURL+"/v1/webhook_endpoints", key, map[string]any{"url": u, "enabled_events": events})
	if res.Status != 200 {
		t.Fatalf("create endpoint %s: %d %s", u, res.Status, res.Raw)
	}
	id, _ := res.Body["id"].(string)
	secret, _ := res.Body["secret"].(string)
	if !strings.HasPrefix(id, "we_") || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("create endpoint: %s", res.Raw)
	}
	return id, secret
}

// trigger creates an endpoint no receiver listens at, only to cause webhook_endpoint.* events
// (created now; updated and deleted through updateTrigger and deleteTrigger).
func (p *platform) trigger(t *testing.T, key string) string {
	t.Helper()
	id, _ := p.createEndpoint(t, key, publicURL, quietType)
	return id
}

func (p *platform) updateTrigger(t *testing.T, key, id string, params map[string]any) {
	t.Helper()
	res := call(t, "POST", p.GatewayURL+"/v1/webhook_endpoints/"+id, key, params)
	if res.Status != 200 {
		t.Fatalf("update %s: %d %s", id, res.Status, res.Raw)
	}
}

func (p *platform) deleteTrigger(t *testing.T, key, id string) {
	t.Helper()
	res := call(t, "DELETE", p.GatewayURL+"/v1/webhook_endpoints/"+id, key, nil)
	if res.Status != 200 {
		t.Fatalf("delete %s: %d %s", id, res.Status, res.Raw)
	}
}

// about selects the requests carrying an event of type typ about object id.
func about(reqs []receiver.Request, typ, objectID string) []receiver.Request {
	var out []receiver.Request
	for _, q := range reqs {
		e := q.Event()
		if (typ == "" || e.Type == typ) && e.ObjectID() == objectID {
			out = append(out, q)
		}
	}
	return out
}

// hasAbout is a receiver condition: at least n requests carry typ about objectID.
func hasAbout(typ, objectID string, n int) func([]receiver.Request) bool {
	return func(reqs []receiver.Request) bool { return len(about(reqs, typ, objectID)) >= n }
}

// answeredAbout is a receiver condition: a request carrying typ about objectID was answered
// with a 2xx.
func answeredAbout(typ, objectID string) func([]receiver.Request) bool {
	return func(reqs []receiver.Request) bool {
		for _, q := range about(reqs, typ, objectID) {
			if q.Succeeded() {
				return true
			}
		}
		return false
	}
}

// listAll pages through a list URL (with its query) and returns every object.
func listAll(t *testing.T, key, u string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	next := u + sep + "limit=100"
	for page := 0; page < 50; page++ {
		res := call(t, "GET", next, key, nil)
		if res.Status != 200 || res.Body["object"] != "list" {
			t.Fatalf("GET %s: %d %s", next, res.Status, res.Raw)
		}
		data, _ := res.Body["data"].([]any)
		for _, o := range data {
			m, _ := o.(map[string]any)
			out = append(out, m)
		}
		if more, _ := res.Body["has_more"].(bool); !more || len(data) == 0 {
			return out
		}
		last, _ := data[len(data)-1].(map[string]any)["id"].(string)
		next = u + sep + "limit=100&starting_after=" + url.QueryEscape(last)
	}
	t.Fatalf("GET %s: more than 50 pages", u)
	return nil
}

// objectIDOf is data.object.id of an event as the API lists it.
func objectIDOf(event map[string]any) string {
	data, _ := event["data"].(map[string]any)
	obj, _ := data["object"].(map[string]any)
	id, _ := obj["id"].(string)
	return id
}

// idOf reads an id field that may be a plain id or an expanded object.
func idOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		id, _ := x["id"].(string)
		return id
	}
	return ""
}

// waitEvent polls GET /v1/events?type=typ until an event about objectID is listed, and
// returns it.
func (p *platform) waitEvent(t *testing.T, key, typ, objectID string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, e := range listAll(t, key, p.GatewayURL+"/v1/events?type="+url.QueryEscape(typ)) {
			if objectIDOf(e) == objectID {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event about %s listed within %s", typ, objectID, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deliveries lists GET /v1/events/:id/deliveries.
func (p *platform) deliveries(t *testing.T, key, eventID string) []map[string]any {
	t.Helper()
	return listAll(t, key, p.GatewayURL+"/v1/events/"+eventID+"/deliveries")
}

// waitDelivery polls the event's deliveries until the one to endpointID satisfies cond, and
// returns it.
func (p *platform) waitDelivery(t *testing.T, key, eventID, endpointID string, timeout time.Duration, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last []map[string]any
	for {
		last = p.deliveries(t, key, eventID)
		for _, d := range last {
			if idOf(d["webhook_endpoint"]) == endpointID && cond(d) {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery of %s to %s: not %s within %s; deliveries: %v", eventID, endpointID, what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func statusIs(s string) func(map[string]any) bool {
	return func(d map[string]any) bool { return d["status"] == s }
}

// attempts returns a delivery's attempts.
func attempts(d map[string]any) []map[string]any {
	list, _ := d["attempts"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, a := range list {
		m, _ := a.(map[string]any)
		out = append(out, m)
	}
	return out
}

// attemptStatus is the HTTP status an attempt received, 0 when none. The issue names the
// content ("response status or error") but not the field, so the usual spellings are read.
func attemptStatus(a map[string]any) int {
	for _, k := range []string{"response_status", "status_code", "http_status", "status"} {
		if f, ok := a[k].(float64); ok {
			return int(f)
		}
	}
	if r, ok := a["response"].(map[string]any); ok {
		for _, k := range []string{"status", "status_code"} {
			if f, ok := r[k].(float64); ok {
				return int(f)
			}
		}
	}
	return 0
}

// attemptError is why an attempt got no response ("" when it did), read like attemptStatus.
func attemptError(a map[string]any) string {
	for _, k := range []string{"error", "error_message", "failure_reason"} {
		switch v := a[k].(type) {
		case string:
			return v
		case map[string]any:
			if m, _ := v["message"].(string); m != "" {
				return m
			}
		}
	}
	return ""
}

// attemptStatuses lists the statuses of a delivery's attempts, sorted.
func attemptStatuses(d map[string]any) []int {
	var out []int
	for _, a := range attempts(d) {
		out = append(out, attemptStatus(a))
	}
	slices.Sort(out)
	return out
}

// eventIDs lists the ids of the events a query selects.
func (p *platform) eventIDs(t *testing.T, key, query string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, e := range listAll(t, key, p.GatewayURL+"/v1/events?"+query) {
		id, _ := e["id"].(string)
		out[id] = true
	}
	return out
}

// verifier builds the independent Standard Webhooks verifier for secrets.
func verifier(t *testing.T, secrets ...string) *receiver.Verifier {
	t.Helper()
	v, err := receiver.NewVerifier(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitStatus polls GET url until it answers want.
func waitStatus(t *testing.T, key, u string, want int, timeout time.Duration) response {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		res := call(t, "GET", u, key, nil)
		if res.Status == want {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %s, want %d within %s", u, res.Status, res.Raw, want, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
