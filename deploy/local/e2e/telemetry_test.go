package e2e

// Traces and metrics through the real programs (issue 14 §1 and §5): the stack exports its spans
// over OTLP/HTTP to an in-test receiver (otlp_test.go), every span sampled and exported within
// 100 ms, and the test follows one webhook endpoint create through the gateway, webhooks-svc,
// MongoDB, the events queue and the delivery to a TLS receiver; then a verification session
// (three programs in one trace, and its expiry as a trace of its own linked to the create); then
// a payment request whose attempt runs as a linked trace. Last, it scrapes every program's
// metrics endpoint and checks the series the traffic must have made.

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/libs/servicetest"
)

// spanWait bounds how long the spans of something that happened may take to arrive (exported
// every 100 ms here; a loaded 2-CPU machine).
const spanWait = 30 * time.Second

const (
	kindServer   = tracepb.Span_SPAN_KIND_SERVER
	kindClient   = tracepb.Span_SPAN_KIND_CLIENT
	kindProducer = tracepb.Span_SPAN_KIND_PRODUCER
	kindConsumer = tracepb.Span_SPAN_KIND_CONSUMER
	kindInternal = tracepb.Span_SPAN_KIND_INTERNAL
)

func TestTelemetry(t *testing.T) {
	t.Parallel()
	col := newCollector(t)
	p := startWith(t, stackConfig{env: verificationEnv(
		"OTEL_EXPORTER_OTLP_ENDPOINT", col.URL,
		"OTEL_TRACES_SAMPLER", "always_on",
		"OTEL_RESOURCE_ATTRIBUTES", "test.run=e2e%20telemetry",
		// Read by the SDK itself from the environment, not by libs/config.
		"OTEL_BSP_SCHEDULE_DELAY", "100",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip",
		"DEPLOYMENT_ENVIRONMENT", "e2e",
		"VERIFICATION_SESSION_TTL", "2s",
		"LOG_LEVEL", "info",
	)})
	t.Cleanup(func() { p.noDeaths(t) })
	rx := receiver.New(t)
	rxURL, err := url.Parse(rx.URL())
	if err != nil {
		t.Fatal(err)
	}
	key := p.newKey(t, "acct_telemetry", false)
	p.createEndpoint(t, key, rx.URL()+"/hooks",
		"webhook_endpoint.created", "verification_session.created", "verification_session.expired")

	t.Run("webhook endpoint create to delivery", func(t *testing.T) {
		res := call(t, "POST", p.GatewayURL+"/v1/webhook_endpoints", key, map[string]any{"url": publicURL, "enabled_events": []string{quietType}})
		if res.Status != 200 {
			t.Fatalf("create: %d %s", res.Status, res.Raw)
		}
		trig := idOf(res.Body["id"])
		traceID, gatewaySpan := traceparent(t, res.Header.Get("Traceparent"))
		q := rx.WaitUntil(t, "/hooks", deliveryWait, "the created event of "+trig, answeredAbout("webhook_endpoint.created", trig))
		eventID := about(q, "webhook_endpoint.created", trig)[0].ID()

		all := col.WaitFor(t, "delivery attempt of "+eventID, spanWait, delivered(eventID))
		tr := find(all, func(s span) bool { return s.TraceID == traceID })
		gw := one(t, "the gateway's server span", tr, ofService("gateway"), ofKind(kindServer))
		if gw.SpanID != gatewaySpan || gw.Parent != "" || gw.Name != "POST /v1/webhook_endpoints" {
			t.Errorf("gateway server span %s; want the root, span %s of the response's traceparent", gw, gatewaySpan)
		}
		svc := checkRequestChain(t, tr, gw, "webhooks", "webhooks-svc", "POST /v1/webhook_endpoints")
		attempt := checkEventChain(t, tr, svc, eventID, rxURL.Port())
		for _, s := range []span{gw, svc, attempt} {
			checkResource(t, s)
		}

		// The access log lines of the request carry the trace and the span they were written in.
		checkLogLine(t, p.logs.String(), "gateway", res.Header.Get("Request-Id"), traceID, gw.SpanID)
		checkLogLine(t, p.logs.String(), "webhooks-svc", res.Header.Get("Request-Id"), traceID, svc.SpanID)
	})

	t.Run("verification session: create in one trace, expiry linked", func(t *testing.T) {
		res := call(t, "POST", p.GatewayURL+"/v1/verification_sessions", key, sessionBody("jane@example.com", nil))
		if res.Status != 200 {
			t.Fatalf("create session: %d %s", res.Status, res.Raw)
		}
		session := idOf(res.Body["id"])
		traceID, gatewaySpan := traceparent(t, res.Header.Get("Traceparent"))
		q := rx.WaitUntil(t, "/hooks", deliveryWait, "created and expired events of "+session, func(r []receiver.Request) bool {
			return answeredAbout("verification_session.created", session)(r) && answeredAbout("verification_session.expired", session)(r)
		})
		created := about(q, "verification_session.created", session)[0].ID()
		expired := about(q, "verification_session.expired", session)[0].ID()
		all := col.WaitFor(t, "both delivery attempts", spanWait, func(s []span) bool {
			return delivered(created)(s) && delivered(expired)(s)
		})

		// gateway → verification-svc → MongoDB, the event published there and consumed in
		// webhooks-svc, its delivery: three programs, one trace.
		tr := find(all, func(s span) bool { return s.TraceID == traceID })
		gw := one(t, "the gateway's server span", tr, ofService("gateway"), ofKind(kindServer))
		if gw.SpanID != gatewaySpan || gw.Parent != "" {
			t.Errorf("gateway server span %s is not the root of the response's traceparent", gw)
		}
		svc := checkRequestChain(t, tr, gw, "verification", "verification-svc", "POST /v1/verification_sessions")
		checkEventChain(t, tr, svc, created, rxURL.Port())

		// The expiry is enqueued in the create's trace, and runs in a trace of its own that
		// links back to that publish.
		schedule := one(t, "the expiry's publish", tr, ofService("verification-svc"), ofKind(kindProducer), notDuplicate,
			withAttr("messaging.destination.name", "verification"), withAttr("messaging.message.id", session+":expire"))
		if !newTree(tr).descends(schedule, svc) {
			t.Errorf("the expiry's publish %s is not within the create's server span %s", schedule, svc)
		}
		expiry := one(t, "the expiry task's span", all, ofService("verification-svc"), ofKind(kindConsumer),
			withAttr("messaging.destination.name", "verification"), withAttr("messaging.message.id", session+":expire"))
		if expiry.Parent != "" || expiry.TraceID == traceID || !slices.Contains(expiry.Links, spanRef{traceID, schedule.SpanID}) {
			t.Errorf("expiry span %s; want the root of a new trace, linked to the publish %s", expiry, schedule.SpanID)
		}
		et := find(all, func(s span) bool { return s.TraceID == expiry.TraceID })
		if len(find(et, ofService("verification-svc"), withAttr("db.system", "mongodb"), childOf(expiry))) == 0 {
			t.Errorf("no MongoDB command under the expiry span:\n%s", dump(et))
		}
		// What the expiry raises is delivered in its trace.
		checkEventChain(t, et, expiry, expired, rxURL.Port())
	})

	t.Run("payment attempts: the first in the request's trace, a retry linked to it", func(t *testing.T) {
		// A card that succeeds from attempt 2: attempt 1 (run by payments-svc's own runners,
		// in the create's trace) is declined and queues attempt 2 as a task, which the advance
		// test helper runs at once, in a trace of its own linked to that publish.
		pa := p.createAgreement(t, key, "tok_test_succeed_from_attempt_2")
		res := call(t, "POST", p.GatewayURL+"/v1/payment_requests", key,
			map[string]any{"payment_agreement": pa["id"], "amount": 5000, "currency": "eur", "description": "rent"})
		if res.Status != 200 {
			t.Fatalf("create payment request: %d %s", res.Status, res.Raw)
		}
		id := idOf(res.Body["id"])
		traceID, _ := traceparent(t, res.Header.Get("Traceparent"))
		p.waitRequest(t, key, id, "waiting for attempt 2", retryScheduled)
		retryTask := id + ":2"
		isAttempt := func(s span) bool { return s.Name == "run payment_request:attempt" }
		all := col.WaitFor(t, "the first attempt's span and the retry's publish", spanWait, func(s []span) bool {
			return len(find(s, isAttempt, withAttr("payment_request.id", id))) > 0 &&
				len(find(s, ofKind(kindProducer), withAttr("messaging.message.id", retryTask))) > 0
		})
		tr := find(all, func(s span) bool { return s.TraceID == traceID })
		svc := one(t, "payments-svc's server span", tr, ofService("payments-svc"), ofKind(kindServer))
		attempt := one(t, "the first attempt's span", tr, ofService("payments-svc"), isAttempt, withAttr("payment_request.id", id))
		if attempt.Parent != svc.SpanID || attempt.Kind != kindInternal || attempt.Attrs["payment_request.attempt"] != "1" {
			t.Errorf("first attempt span %s; want a child of the create's server span %s", attempt, svc.SpanID)
		}
		if len(find(tr, withAttr("db.system", "mongodb"), childOf(attempt))) == 0 {
			t.Errorf("no MongoDB command under the first attempt's span:\n%s", dump(tr))
		}
		if n := len(find(all, ofKind(kindProducer), withAttr("messaging.message.id", id+":1"))); n != 0 {
			t.Errorf("the first attempt, run inline, was also queued (%d publishes)", n)
		}
		schedule := one(t, "the retry's publish", tr, ofService("payments-svc"), ofKind(kindProducer), notDuplicate,
			withAttr("messaging.destination.name", "payments"), withAttr("messaging.message.id", retryTask))
		if !newTree(tr).descends(schedule, attempt) {
			t.Errorf("the retry's publish %s is not within the first attempt %s", schedule, attempt)
		}

		if adv := p.advance(t, key, id); adv.Status != 200 || adv.Body["status"] != "succeeded" {
			t.Fatalf("advance: %d %s", adv.Status, adv.Raw)
		}
		all = col.WaitFor(t, "the retry task's span", spanWait, func(s []span) bool {
			return len(find(s, ofKind(kindConsumer), withAttr("messaging.message.id", retryTask))) > 0
		})
		retry := one(t, "the retry task's span", all, ofService("payments-svc"), ofKind(kindConsumer), withAttr("messaging.message.id", retryTask))
		if retry.Parent != "" || retry.TraceID == traceID || !slices.Contains(retry.Links, spanRef{traceID, schedule.SpanID}) {
			t.Errorf("retry span %s; want the root of a new trace, linked to the publish %s", retry, schedule.SpanID)
		}
		rt := find(all, func(s span) bool { return s.TraceID == retry.TraceID })
		if len(find(rt, withAttr("db.system", "mongodb"), childOf(retry))) == 0 {
			t.Errorf("no MongoDB command under the retry span:\n%s", dump(rt))
		}

		// The first attempt's events (processing, then its charge's and its outcome's) are
		// published within its span and consumed by webhooks-svc in that trace. A charge that ends within
		// the store's hold (docstore's Bracket) has them stored by one write and sent as one batch
		// task, whose spans name them; a slower one (a loaded machine) has the claim stored
		// first, so the events go in more tasks. Both are right; each is checked.
		inAttempt := func(s span) bool { return s.TraceID == attempt.TraceID }
		published := func(s []span) []span {
			// In the create's trace: those of the attempt's span, not the create's own event.
			tree := newTree(find(s, inAttempt))
			return find(s, inAttempt, ofService("payments-svc"), ofKind(kindProducer), notDuplicate,
				withAttr("messaging.destination.name", "events"), func(pub span) bool { return tree.descends(pub, attempt) })
		}
		eventsOf := func(pub span) []string {
			if pub.Attrs["asynq.task.type"] == "batch:events" {
				return strings.Split(pub.Attrs["event.ids"], ",")
			}
			return []string{pub.Attrs["messaging.message.id"]}
		}
		consumed := func(s []span, pub span) []span {
			return find(s, inAttempt, ofService("webhooks-svc"), ofKind(kindConsumer), childOf(pub))
		}
		all = col.WaitFor(t, "the consumption of the attempt's three events", spanWait, func(s []span) bool {
			n := 0
			for _, pub := range published(s) {
				if len(consumed(s, pub)) > 0 {
					n += len(eventsOf(pub))
				}
			}
			return n >= 3
		})
		at := find(all, inAttempt)
		var ids []string
		for _, pub := range published(all) {
			evs := eventsOf(pub)
			ids = append(ids, evs...)
			if !newTree(at).descends(pub, attempt) {
				t.Errorf("publish of the attempt's events %s is not within the attempt %s", pub, attempt)
			}
			if pub.Attrs["asynq.task.type"] == "batch:events" {
				if pub.Attrs["messaging.batch.message_count"] != strconv.Itoa(len(evs)) || !strings.HasPrefix(pub.Attrs["messaging.message.id"], evs[0]+":"+strconv.Itoa(len(evs))+":") {
					t.Errorf("publish of a batch %s %v; want its count and its events named", pub, pub.Attrs)
				}
			} else if pub.Attrs["asynq.task.type"] != "event" {
				t.Errorf("publish of the attempt's events %s %v; want event or batch:events tasks", pub, pub.Attrs)
			}
			consume := one(t, "the consumption of the attempt's events", at, ofService("webhooks-svc"), ofKind(kindConsumer), childOf(pub))
			if consume.Attrs["messaging.message.id"] != pub.Attrs["messaging.message.id"] || consume.Attrs["event.ids"] != pub.Attrs["event.ids"] ||
				consume.Attrs["messaging.batch.message_count"] != pub.Attrs["messaging.batch.message_count"] {
				t.Errorf("consumer span %s %v; want what its publish %v names", consume, consume.Attrs, pub.Attrs)
			}
		}
		if len(ids) != 3 || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 3 || !strings.HasPrefix(ids[0], "evt_") || !strings.HasPrefix(ids[2], "evt_") {
			t.Errorf("the attempt's events %v; want three (processing, the charge's, retrying)", ids)
		}
	})

	if enc := col.Encodings(); enc["gzip"] == 0 || len(enc) != 1 {
		t.Errorf("exports by Content-Encoding %v; want all gzip (OTEL_EXPORTER_OTLP_COMPRESSION, read by the SDK)", enc)
	}

	t.Run("metrics after traffic", func(t *testing.T) {
		checkMetrics(t, p)
	})
}

// delivered reports whether the spans hold the answered delivery attempt of eventID and every
// span above it, up to its trace's root. A parent ends after its children, so it arrives later
// (the consumer span of the fan-out after the attempt it made, in a later export): the attempt
// alone is not yet the whole trace.
func delivered(eventID string) func([]span) bool {
	return func(all []span) bool {
		t := newTree(all)
		for _, a := range find(all, ofKind(kindClient), withAttr("webhook.message_id", eventID), withAttr("http.response.status_code", "200")) {
			if t.rooted(a) {
				return true
			}
		}
		return false
	}
}

// notDuplicate leaves out a publish that found its task queued already: the outbox relay may
// publish an event the fast path was still publishing, which asynq then refuses by its id.
func notDuplicate(s span) bool { return s.Attrs["asynq.task.duplicate"] != "true" }

// one returns the single span matching conds, failing the test unless exactly one does.
func one(t *testing.T, what string, spans []span, conds ...func(span) bool) span {
	t.Helper()
	got := find(spans, conds...)
	if len(got) != 1 {
		t.Fatalf("%d spans for %s, want 1; the trace:\n%s", len(got), what, dump(spans))
	}
	return got[0]
}

// checkRequestChain checks that the gateway's server span gw forwarded the request to the
// service (a client span, child of gw), whose server span is a child of that, named name, with
// at least one MongoDB command of its own; it returns the service's server span.
func checkRequestChain(t *testing.T, tr []span, gw span, upstream, service, name string) span {
	t.Helper()
	fwd := one(t, "the gateway's call to "+service, tr, ofService("gateway"), ofKind(kindClient), childOf(gw), withAttr("rental.upstream", upstream))
	svc := one(t, service+"'s server span", tr, ofService(service), ofKind(kindServer), childOf(fwd))
	if svc.Name != name {
		t.Errorf("%s's server span is named %q, want %q", service, svc.Name, name)
	}
	if len(find(tr, ofService(service), ofKind(kindClient), withAttr("db.system", "mongodb"), childOf(svc))) == 0 {
		t.Errorf("no MongoDB command span under %s:\n%s", svc, dump(tr))
	}
	return svc
}

// checkEventChain checks, in trace tr, the life of event eventID raised under span cause: its
// publish to the events queue (a producer span within cause), its consumption by webhooks-svc
// (a consumer span, child of the publish) with MongoDB commands of its own, and the delivery
// attempt to the receiver at port rxPort (a client span below the consumer, answered 200). It
// returns the attempt's span.
func checkEventChain(t *testing.T, tr []span, cause span, eventID, rxPort string) span {
	t.Helper()
	tree := newTree(tr)
	pub := one(t, "the publish of "+eventID, tr, ofKind(kindProducer), notDuplicate, withAttr("messaging.message.id", eventID))
	if pub.Service != cause.Service || !tree.descends(pub, cause) || pub.Attrs["messaging.destination.name"] != "events" {
		t.Errorf("publish %s is not on the events queue within %s", pub, cause)
	}
	consume := one(t, "the consumption of "+eventID, tr, ofService("webhooks-svc"), ofKind(kindConsumer), childOf(pub))
	if consume.Attrs["messaging.message.id"] != eventID || consume.Attrs["messaging.destination.name"] != "events" {
		t.Errorf("consumer span %s", consume)
	}
	if len(find(tr, ofService("webhooks-svc"), withAttr("db.system", "mongodb"), childOf(consume))) == 0 {
		t.Errorf("no MongoDB command under the consumer span %s", consume)
	}
	attempts := find(tr, ofService("webhooks-svc"), ofKind(kindClient), withAttr("webhook.message_id", eventID), withAttr("http.response.status_code", "200"))
	if len(attempts) != 1 {
		t.Fatalf("%d answered delivery attempts of %s in the trace, want 1:\n%s", len(attempts), eventID, dump(tr))
	}
	a := attempts[0]
	if !tree.descends(a, consume) || a.Attrs["server.address"] != "127.0.0.1" || a.Attrs["server.port"] != rxPort || a.Error {
		t.Errorf("attempt %s; want it below the consumer span %s, to 127.0.0.1:%s", a, consume.SpanID, rxPort)
	}
	for k, v := range a.Attrs {
		if strings.Contains(v, "/hooks") {
			t.Errorf("the attempt's %s attribute holds the endpoint's path: %q", k, v)
		}
	}
	return a
}

// checkResource checks what a span says of its process.
func checkResource(t *testing.T, s span) {
	t.Helper()
	r := s.Resource
	if r["service.version"] == "" || r["service.instance.id"] == "" || r["deployment.environment.name"] != "e2e" || r["test.run"] != "e2e telemetry" {
		t.Errorf("%s resource %v: want service.version, service.instance.id, deployment.environment.name=e2e and OTEL_RESOURCE_ATTRIBUTES' test.run", s.Service, r)
	}
}

// checkLogLine finds program's access log line of the request and checks its trace and span.
func checkLogLine(t *testing.T, logs, program, requestID, traceID, spanID string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := "[" + program + "] "
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok || !strings.Contains(line, requestID) {
			continue
		}
		var rec struct {
			Msg       string `json:"msg"`
			RequestID string `json:"request_id"`
			TraceID   string `json:"trace_id"`
			SpanID    string `json:"span_id"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "request" || rec.RequestID != requestID {
			continue
		}
		if rec.TraceID != traceID || rec.SpanID != spanID {
			t.Errorf("%s's access log line %s; want trace_id %s and span_id %s", program, line, traceID, spanID)
		}
		return
	}
	t.Errorf("no access log line of %s for request %s", program, requestID)
}

// checkMetrics scrapes every program's metrics endpoint after the traffic above.
func checkMetrics(t *testing.T, p *platform) {
	scrape := map[string]servicetest.Metrics{}
	for _, name := range []string{"gateway", "verification-svc", "collections-svc", "payments-svc", "webhooks-svc"} {
		u := p.MetricsURLs[name]
		if u == "" {
			t.Fatalf("no metrics URL for %s: %v", name, p.MetricsURLs)
		}
		scrape[name] = servicetest.Scrape(t, u)
	}
	// RED of every HTTP server: the creates above, by route and status, with their durations.
	for _, c := range []struct{ program, route string }{
		{"gateway", "/v1/webhook_endpoints"},
		{"gateway", "/v1/verification_sessions"},
		{"gateway", "/v1/payment_requests"},
		{"webhooks-svc", "/v1/webhook_endpoints"},
		{"verification-svc", "/v1/verification_sessions"},
		{"payments-svc", "/v1/payment_requests"},
	} {
		labels := map[string]string{"http_request_method": "POST", "http_route": c.route, "http_response_status_code": "200", "service_name": c.program}
		h := scrape[c.program].Histogram(t, "http_server_request_duration_seconds", labels)
		if h.GetSampleCount() < 1 || h.GetSampleSum() <= 0 || h.GetSampleSum() > float64(h.GetSampleCount())*30 {
			t.Errorf("%s POST %s: %d requests taking %gs in all", c.program, c.route, h.GetSampleCount(), h.GetSampleSum())
		}
	}
	if n := scrape["gateway"].Histogram(t, "http_server_request_duration_seconds",
		map[string]string{"http_request_method": "POST", "http_route": "/v1/webhook_endpoints", "http_response_status_code": "200"}).GetSampleCount(); n != 2 {
		t.Errorf("the gateway counted %d endpoint creates, want the 2 made", n)
	}
	if v := scrape["gateway"].Gauge(t, "http_server_active_requests", map[string]string{"listener": "public"}); v != 0 {
		t.Errorf("the gateway has %v requests in flight at rest", v)
	}
	// Workers: tasks handled by queue and outcome.
	for _, c := range []struct{ program, queue string }{{"webhooks-svc", "events"}, {"verification-svc", "verification"}, {"payments-svc", "payments"}} {
		h := scrape[c.program].Histogram(t, "messaging_process_duration_seconds", map[string]string{"messaging_destination_name": c.queue, "outcome": "ok"})
		if h.GetSampleCount() < 1 {
			t.Errorf("%s handled %d tasks of %s", c.program, h.GetSampleCount(), c.queue)
		}
	}
	// Queue depth by state and latency: read from Redis at the scrape; all drained by now.
	for _, c := range []struct{ program, queue string }{
		{"webhooks-svc", "events"}, {"webhooks-svc", "webhooks"}, {"verification-svc", "verification"}, {"payments-svc", "payments"},
	} {
		for _, state := range []string{"pending", "active", "scheduled", "retry", "archived"} {
			v := scrape[c.program].Gauge(t, "asynq_queue_tasks", map[string]string{"queue": c.queue, "state": state})
			if v < 0 || v != math.Trunc(v) || (state == "archived" && v != 0) {
				t.Errorf("%s: %v tasks %s in %s", c.program, v, state, c.queue)
			}
		}
		if v := scrape[c.program].Gauge(t, "asynq_queue_latency_seconds", map[string]string{"queue": c.queue}); v < 0 || v > 60 {
			t.Errorf("%s: latency of %s %vs", c.program, c.queue, v)
		}
	}
	// Delivery success rate: every attempt above succeeded.
	if v := scrape["webhooks-svc"].Counter(t, "webhooks_delivery_attempts_total", map[string]string{"result": "succeeded"}); v < 4 {
		t.Errorf("webhooks-svc counted %v successful attempts, want at least the 4 deliveries above", v)
	}
	if h := scrape["webhooks-svc"].Histogram(t, "webhooks_delivery_attempt_duration_seconds", map[string]string{"result": "succeeded"}); h.GetSampleCount() < 4 {
		t.Errorf("webhooks-svc measured %d successful attempts", h.GetSampleCount())
	}
	// Payment attempt outcomes.
	if v := scrape["payments-svc"].Counter(t, "payments_attempts_total", map[string]string{"outcome": "succeeded"}); v != 1 {
		t.Errorf("payments-svc counted %v succeeded attempts, want 1", v)
	}
	// The runtime's own, and the resource.
	for name, fams := range scrape {
		if v := fams.Gauge(t, "go_goroutines", nil); v < 1 {
			t.Errorf("%s: go_goroutines %v", name, v)
		}
		if v := fams.Gauge(t, "target_info", map[string]string{"service_name": name, "deployment_environment_name": "e2e"}); v != 1 {
			t.Errorf("%s: target_info %v", name, v)
		}
	}
	// Never on the public listeners.
	for name, u := range map[string]string{"gateway": p.GatewayURL, "webhooks-svc": p.ServiceURLs["webhooks-svc"]} {
		res, err := http.Get(u + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == 200 || strings.Contains(string(body), "http_server_request_duration") {
			t.Errorf("%s serves metrics on its API listener: %d %.200s", name, res.StatusCode, body)
		}
	}
}
