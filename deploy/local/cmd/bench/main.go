// Command bench starts the platform as `make run` does (embedded stores unless MONGODB_URI /
// REDIS_URL are set) and measures it from outside: the edge (the gateway with production
// settings against nginx and HAProxy configured as API gateways, nginx proxying and a bare
// Fiber proxy, all in front of one stub service, with wrk; edge.go, peers.go), authenticated GET /v1/webhook_endpoints/:id through the gateway and the same
// request sent straight to webhooks-svc with a valid internal identity, event-to-delivery
// latency and throughput, verification sessions (create latency, expiry at expires_at, the
// list by applicant email over them), payments (collection rate, create latency, the list by
// status over 10,000 requests, scheduled retries' memory) and collection cases (the list with
// two filters over 10,000 cases, concurrent uploads and the service's memory). It prints
// figures next to the targets; it asserts nothing.
//
// Beside each rate it prints the CPU time per unit of work (request, delivery, collected
// payment, list request), split by program, the embedded stores and the load generator
// (cpumeter.go). For that, unlike `make run`, the embedded stores run in a process of their own
// (stores.go), the bench's binary started again, whose URLs the stack is given as if they were
// external servers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
	"rentalplatform/libs/identity"
)

func main() {
	if ok, err := serveStores(os.Args[1:], os.Getenv, os.Stdin, os.Stdout); ok {
		// The host of the embedded stores (stores.go): it serves until the bench lets it go.
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench stores:", err)
			os.Exit(1)
		}
		return
	}
	if ok, err := serveMode(os.Args[1:]); ok {
		// One of the edge comparison's servers (edge.go): it serves until killed.
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Unlike make run's launcher, this process hosts no store (stores.go): the Go collector's
	// defaults suit a load generator.
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type settings struct {
	rate         int
	duration     time.Duration
	concurrency  int
	warmup       time.Duration
	eventRate    int
	deliveryRate int
	only         string
	rounds       int    // the edge comparison's rounds
	edgeLogLevel string // the edge comparison's gateway's LOG_LEVEL
	// edgeProfile is where a CPU profile of the gateway taken during its first measured
	// edge round goes ("": none).
	edgeProfile string
	// edgeRefGateway is a gateway binary measured beside this one (another build: before a
	// change), with the same settings.
	edgeRefGateway string
	// edgeRefEnv are settings (KEY=value) the reference gateway runs with on top of the
	// production ones: what a feature costs, measured in one sitting.
	edgeRefEnv []string
	// verification
	verifRate     int
	verifSessions int
	verifTTL      time.Duration
	payRequests   int // payments (a): requests created in bulk and collected
	payRetries    int // payments (c): scheduled retries held in Redis
	payList       int // payments (d): requests of one account the list by status runs over
	// collections
	collCases     int // cases of one account the filtered list runs over
	collUploads   int // concurrent uploads
	collUploadMiB int // size of each
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var s settings
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&s.rate, "rate", 1000, "requests/s for the fixed-rate latency runs")
	fs.DurationVar(&s.duration, "duration", 10*time.Second, "length of each measured run")
	fs.IntVar(&s.concurrency, "concurrency", 64, "connections for the maximum-throughput runs")
	fs.DurationVar(&s.warmup, "warmup", 2*time.Second, "unmeasured load before each run")
	fs.IntVar(&s.eventRate, "event-rate", 500, "events/s for the event-to-delivery latency run (the targets are at 500)")
	fs.IntVar(&s.deliveryRate, "delivery-rate", 3000, "deliveries/s offered in the delivery throughput run (20 endpoints); the target is to sustain them all (0 skips the run)")
	fs.StringVar(&s.only, "only", "", "run only 'gateway' (the edge comparison, then the gateway against webhooks-svc), 'edge' (the edge comparison alone), 'delivery', 'verification', 'payments' or 'collections', "+
		"or several, comma-separated, in the whole run's order on one platform (-only gateway,delivery: the delivery runs after what the gateway section left, as in the whole run). "+
		"The filtered lists (issue 31) are in three of them: sessions by email in 'verification' (over its sessions), requests by status in 'payments' (d), the two-filter case list in 'collections' (a); "+
		"alone: -only payments -payment-requests 0 -payment-retries 0, -only collections -collection-uploads 0")
	fs.StringVar(&s.edgeLogLevel, "edge-log-level", "info", "LOG_LEVEL of the gateway in the edge comparison (warn: without access logs)")
	fs.StringVar(&s.edgeProfile, "edge-profile", "", "write a CPU profile of the gateway, taken during its first measured round of the edge comparison, to this file (go tool pprof -top FILE)")
	fs.StringVar(&s.edgeRefGateway, "edge-ref-gateway", "", "a gateway binary (another build, say of the commit before a change) measured in the edge comparison beside this one, with the same settings")
	fs.Func("edge-ref-env", "settings (KEY=value, space-separated) the reference gateway runs with on top of the production ones, e.g. 'LOG_LEVEL=warn' or 'GATEWAY_RATE_LIMIT_TEST=0': what a feature costs. Without -edge-ref-gateway the reference is this build", func(v string) error {
		for _, kv := range strings.Fields(v) {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("%q is not KEY=value", kv)
			}
			s.edgeRefEnv = append(s.edgeRefEnv, kv)
		}
		return nil
	})
	fs.IntVar(&s.rounds, "rounds", 3, "rounds of the edge comparison (gateway), each running every target once in turn; medians are reported")
	fs.IntVar(&s.verifRate, "verification-rate", 100, "verification sessions created per second")
	fs.IntVar(&s.verifSessions, "verification-sessions", 10000, "verification sessions created, each then expiring; the list by applicant email then runs over them")
	fs.DurationVar(&s.verifTTL, "verification-ttl", 2*time.Minute, "the sessions' lifetime (VERIFICATION_SESSION_TTL); longer than the creates take keeps the two phases apart")
	fs.IntVar(&s.payRequests, "payment-requests", 10_000, "payment requests created in bulk and collected (payments, part a; 0 skips it)")
	fs.IntVar(&s.payRetries, "payment-retries", 100_000, "scheduled retries held in Redis (payments, part c; 0 skips it)")
	fs.IntVar(&s.payList, "payment-list-requests", 10_000, "payment requests of one account, created in bulk, that the list by status runs over (payments, part d; 0 skips it)")
	fs.IntVar(&s.collCases, "collection-cases", 10_000, "collection cases of one account the filtered list runs over (collections (a); 0 skips it)")
	fs.IntVar(&s.collUploads, "collection-uploads", 20, "concurrent file uploads (collections (b); 0 skips it)")
	fs.IntVar(&s.collUploadMiB, "collection-upload-mib", 5, "size of each concurrent upload, MiB (at most 25)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the load generator and the receiver) to this file")
	storesProfile := fs.String("stores-cpuprofile", "", "write a CPU profile of the embedded stores' process (FerretDB, miniredis) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sections := map[string]bool{}
	if s.only != "" {
		for _, name := range strings.Split(s.only, ",") {
			if !slices.Contains([]string{"gateway", "edge", "delivery", "verification", "payments", "collections"}, name) {
				return fmt.Errorf("-only %q: want gateway, edge, delivery, verification, payments or collections, or several of them comma-separated", s.only)
			}
			sections[name] = true
		}
	}
	// runs reports whether the section is run: every one without -only.
	runs := func(name string) bool { return s.only == "" || sections[name] }
	if s.rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", s.rounds)
	}
	if s.collUploadMiB < 1 || s.collUploadMiB > 25 {
		return fmt.Errorf("-collection-upload-mib %d: want 1 to 25 (the service's file limit)", s.collUploadMiB)
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}

	// The load would be throttled by the default rate limits: they are off for the dev key,
	// which the delivery bench and the gateway baseline use. The gateway bench measures
	// limiting with a key of its own (a per-key limit set far above the load, so it is
	// evaluated on every request but never refuses).
	//
	// The stores MONGODB_URI / REDIS_URL do not name run in a process of their own, given to the
	// stack as external servers; it stops after the platform (deferred first).
	if url := getenv("REDIS_URL"); url != "" {
		if err := checkRedisFree(ctx, url); err != nil {
			return err
		}
	}
	stores, err := startStores(ctx, getenv, *storesProfile, stdout)
	if err != nil {
		return err
	}
	defer stores.Stop()
	p, err := load.StartPlatform(ctx, "bench", stores.getenv(getenv), map[string]string{"VERIFICATION_SESSION_TTL": s.verifTTL.String()}, stdout)
	if err != nil {
		return err
	}
	defer p.Stop()
	st, root, dataDir, logFile := p.Stack, p.Root, p.DataDir, p.Log
	cpu := newCPUMeter(st, stores.PID())
	idle := cpu.sample()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(3 * time.Second):
	}
	fmt.Fprintf(stdout, "CPU of the platform at rest, just after its start (every CPU-per-unit figure includes it):\n  %s\n", cpu.share(idle))

	if runs("gateway") || runs("edge") {
		if err := benchEdge(ctx, st, s, root, dataDir, logFile, stdout); err != nil {
			return err
		}
	}
	if runs("gateway") {
		if err := benchGateway(ctx, st, cpu, s, getenv, stdout); err != nil {
			return err
		}
	}
	if runs("delivery") {
		if err := benchDeliveries(ctx, st, cpu, s, stdout); err != nil {
			return err
		}
	}
	if runs("verification") {
		if err := benchVerification(ctx, st, cpu, s, getenv, stdout); err != nil {
			return err
		}
	}
	if runs("payments") {
		if err := benchPayments(ctx, st, cpu, s, getenv, stdout); err != nil {
			return err
		}
	}
	if runs("collections") {
		return benchCollections(ctx, st, cpu, s, getenv, stdout)
	}
	return nil
}

// benchGateway measures GET /v1/webhook_endpoints/:id through the gateway and straight at
// webhooks-svc, then the cost of the gateway's rate limiting and idempotency: the same GET with
// a key whose rate limit is evaluated on every request, and a POST without and with a fresh
// Idempotency-Key per request.
func benchGateway(ctx context.Context, st *stack.Stack, cpu *cpuMeter, s settings, getenv func(string) string, stdout io.Writer) error {
	endpointID, err := createEndpoint(st)
	if err != nil {
		return err
	}
	signer, err := identity.NewSigner([]byte(st.InternalAuthSecret), nil)
	if err != nil {
		return err
	}
	// A key of the same account with a rate limit of its own, far above any load here: the
	// limit is evaluated in Redis on every request and never refuses one.
	limited, status, err := st.Admin(ctx, http.MethodPost, "/admin/api_keys", map[string]any{"account": "acct_dev", "rate_limit": 1_000_000})
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("creating the rate-limited bench key: %d %v %v", status, limited, err)
	}
	limitedKey, _ := limited["secret"].(string)
	path := "/v1/webhook_endpoints/" + endpointID
	gateway := target{name: "gateway", url: st.GatewayURL + path, prepare: func(r *fasthttp.Request) {
		r.Header.Set("Authorization", "Bearer "+st.DevAPIKey)
	}}
	gatewayRL := target{name: "gateway, rate limit on", url: st.GatewayURL + path, prepare: func(r *fasthttp.Request) {
		r.Header.Set("Authorization", "Bearer "+limitedKey)
	}}
	direct := target{name: "direct", url: st.ServiceURLs["webhooks-svc"] + path, prepare: func(r *fasthttp.Request) {
		signer.Sign(r.Header.Set, identity.Identity{Account: "acct_dev", RequestID: "req_bench"}, fasthttp.MethodGet, path)
	}}
	// The POST is an update the service refuses in validation (400, before any store access),
	// so the figures are the gateway's cost, not the store's. With a key, every request takes
	// an idempotency lock in Redis and then stores the answer (kept 24 h), exactly as for a
	// request that writes.
	post := func(r *fasthttp.Request) {
		r.Header.SetMethod(fasthttp.MethodPost)
		r.Header.SetContentType("application/json")
		r.SetBodyString(`{"description":5}`)
	}
	var idemSeq atomic.Int64
	runID := time.Now().UnixNano()
	postOff := target{name: "gateway POST", url: st.GatewayURL + path, status: 400, prepare: func(r *fasthttp.Request) {
		post(r)
		r.Header.Set("Authorization", "Bearer "+st.DevAPIKey)
	}}
	postOn := target{name: "gateway POST, rate limit + Idempotency-Key", url: st.GatewayURL + path, status: 400, prepare: func(r *fasthttp.Request) {
		post(r)
		r.Header.Set("Authorization", "Bearer "+limitedKey)
		r.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d-%d", runID, idemSeq.Add(1)))
	}}

	// A POST that writes (a new description each time: a store write and a
	// webhook_endpoint.updated event), to see the idempotency cost next to a request's real work.
	var descSeq atomic.Int64
	write := func(r *fasthttp.Request) {
		r.Header.SetMethod(fasthttp.MethodPost)
		r.Header.SetContentType("application/json")
		r.SetBodyString(fmt.Sprintf(`{"description":"bench %d-%d"}`, runID, descSeq.Add(1)))
	}
	writeOff := target{name: "gateway POST that writes", url: st.GatewayURL + path, prepare: func(r *fasthttp.Request) {
		write(r)
		r.Header.Set("Authorization", "Bearer "+st.DevAPIKey)
	}}
	writeOn := target{name: "… rate limit + Idempotency-Key", url: st.GatewayURL + path, prepare: func(r *fasthttp.Request) {
		write(r)
		r.Header.Set("Authorization", "Bearer "+limitedKey)
		r.Header.Set("Idempotency-Key", fmt.Sprintf("bench-w-%d-%d", runID, idemSeq.Add(1)))
	}}

	store := "embedded FerretDB v1.24 (SQLite), webhook_endpoints collection: 1 document"
	if getenv("MONGODB_URI") != "" {
		store = "MongoDB at MONGODB_URI, webhook_endpoints collection: 1 document"
	}
	redisDesc := "embedded miniredis"
	if getenv("REDIS_URL") != "" {
		redisDesc = "Redis at REDIS_URL"
	}
	fmt.Fprintf(stdout, "\nGET /v1/webhook_endpoints/:id — %d CPUs, store: %s; rate limits and idempotency in %s\n", runtime.NumCPU(), store, redisDesc)
	fmt.Fprintf(stdout, "Load generator runs on the same machine and shares its CPUs.\n")
	fmt.Fprintf(stdout, "'gateway' is the dev key (rate limits off, as the foundation measured); 'rate limit on' is a key whose\n")
	fmt.Fprintf(stdout, "limit is evaluated in Redis on every request (set far above the load). The POST is refused by the\n")
	fmt.Fprintf(stdout, "service's validation (400, no store access), so its figures are the gateway's own cost.\n\n")

	all := []target{direct, gateway, gatewayRL, postOff, postOn}
	fmt.Fprintf(stdout, "Fixed rate %d req/s for %s (latency measured from each request's scheduled start):\n", s.rate, s.duration)
	fixed := map[string]result{}
	for _, t := range all {
		openLoop(ctx, t, s.rate, s.warmup)
		c0 := cpu.sample()
		r := openLoop(ctx, t, s.rate, s.duration)
		fixed[t.name] = r
		fmt.Fprintf(stdout, "  %-44s %s\n", t.name, r)
		fmt.Fprintf(stdout, "    %s\n", cpu.per(c0, r.sent-r.failed, "request"))
	}
	addP50 := fixed["gateway"].p50 - fixed["direct"].p50
	addP99 := fixed["gateway"].p99 - fixed["direct"].p99
	fmt.Fprintf(stdout, "  gateway adds p50 %s (target ≤ 1ms), p99 %s (target ≤ 3ms)\n", load.Ms(addP50), load.Ms(addP99))
	fmt.Fprintf(stdout, "  rate limiting adds p50 %s, p99 %s to the GET; rate limit + idempotency add p50 %s, p99 %s to the POST\n\n",
		load.Ms(fixed[gatewayRL.name].p50-fixed["gateway"].p50), load.Ms(fixed[gatewayRL.name].p99-fixed["gateway"].p99),
		load.Ms(fixed[postOn.name].p50-fixed[postOff.name].p50), load.Ms(fixed[postOn.name].p99-fixed[postOff.name].p99))

	fmt.Fprintf(stdout, "Maximum throughput, %d connections, %s:\n", s.concurrency, s.duration)
	closed := map[string]result{}
	for _, t := range append(all, writeOff, writeOn) {
		closedLoop(ctx, t, s.concurrency, s.warmup)
		c0 := cpu.sample()
		r := closedLoop(ctx, t, s.concurrency, s.duration)
		closed[t.name] = r
		note := ""
		if t.name == "gateway" {
			const target = 5000 // authenticated req/s, the foundation's
			note = fmt.Sprintf("  (target ≥ %d req/s authenticated)", target)
			// The gateway cannot answer faster than the service behind it; on the embedded
			// store that service is below the target on its own (a store bound, not the edge's).
			if d := closed[direct.name].rate(); d < target {
				note = fmt.Sprintf("  (target ≥ %d req/s authenticated; out of reach here: the service alone answers %.0f, bound by its store)", target, d)
			}
		}
		fmt.Fprintf(stdout, "  %-44s %s%s\n", t.name, r, note)
		fmt.Fprintf(stdout, "    %s\n", cpu.per(c0, r.sent-r.failed, "request"))
	}
	cost := func(on, off string) float64 { return 100 * (1 - closed[on].rate()/closed[off].rate()) }
	fmt.Fprintf(stdout, "  throughput cost: rate limiting %.1f%% of the GET; rate limit + idempotency %.1f%% of the POST refused in validation, %.1f%% of the POST that writes (target ≤ 20%%)\n",
		cost(gatewayRL.name, "gateway"), cost(postOn.name, postOff.name), cost(writeOn.name, writeOff.name))
	return nil
}

func createEndpoint(st *stack.Stack) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(st.GatewayURL + "/v1/webhook_endpoints")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set("Authorization", "Bearer "+st.DevAPIKey)
	req.Header.SetContentType("application/json")
	// Subscribed to a type no benchmark raises: this endpoint is for reading and writing, and a
	// subscriber that cannot be reached (no internet here) would take its share of every fan-out
	// in the delivery benchmark that follows.
	req.SetBodyString(`{"url":"https://example.com/bench","enabled_events":["payment_request.failed"]}`)
	if err := fasthttp.DoTimeout(req, resp, 10*time.Second); err != nil {
		return "", fmt.Errorf("creating the endpoint: %w", err)
	}
	if resp.StatusCode() != 200 {
		return "", fmt.Errorf("creating the endpoint: %d %s", resp.StatusCode(), resp.Body())
	}
	var out struct{ ID string }
	if err := json.Unmarshal(resp.Body(), &out); err != nil || out.ID == "" {
		return "", fmt.Errorf("creating the endpoint: %s", resp.Body())
	}
	return out.ID, nil
}

type target struct {
	name    string
	url     string
	status  int // expected answer; 0 means 200
	prepare func(*fasthttp.Request)
}

type result struct {
	sent, failed  int
	elapsed       time.Duration
	p50, p99, max time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%7.0f req/s  p50 %s  p99 %s  max %s  errors %d/%d",
		r.rate(), load.Ms(r.p50), load.Ms(r.p99), load.Ms(r.max), r.failed, r.sent)
}

// rate is the answered requests per second.
func (r result) rate() float64 { return float64(r.sent-r.failed) / r.elapsed.Seconds() }

func do(c *fasthttp.Client, t target) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(t.url)
	t.prepare(req)
	if err := c.Do(req, resp); err != nil {
		return err
	}
	want := t.status
	if want == 0 {
		want = 200
	}
	if resp.StatusCode() != want {
		return fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
	}
	return nil
}

// openLoop sends requests on a fixed schedule regardless of how fast answers come, and
// measures each from its scheduled time, so a stall shows up as latency instead of as fewer
// requests (no coordinated omission).
func openLoop(ctx context.Context, t target, rate int, d time.Duration) result {
	c := load.NewClient(512)
	interval := time.Second / time.Duration(rate)
	n := int(d / interval)
	lat := make([]time.Duration, n)
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func(i int, at time.Time) {
			defer wg.Done()
			if err := do(c, t); err != nil {
				failed.Add(1)
			}
			lat[i] = time.Since(at)
		}(i, at)
	}
	wg.Wait()
	return summarize(lat, int(failed.Load()), time.Since(start))
}

// closedLoop keeps conns requests in flight for d and reports what the system sustained.
func closedLoop(ctx context.Context, t target, conns int, d time.Duration) result {
	c := load.NewClient(conns)
	deadline := time.Now().Add(d)
	lats := make([][]time.Duration, conns)
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := do(c, t); err != nil {
					failed.Add(1)
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return summarize(all, int(failed.Load()), time.Since(start))
}

func summarize(lat []time.Duration, failed int, elapsed time.Duration) result {
	r := result{sent: len(lat), failed: failed, elapsed: elapsed}
	if len(lat) == 0 {
		return r
	}
	slices.Sort(lat)
	r.p50 = lat[len(lat)*50/100]
	r.p99 = lat[len(lat)*99/100]
	r.max = lat[len(lat)-1]
	return r
}
