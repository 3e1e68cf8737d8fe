package main

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
)

// benchTarget is the path the benchmarks call; the stub service answers it whatever it is.
const benchTarget = "/v1/webhook_endpoints/we_01h0000000000000000000000"

// benchStack starts the gateway in front of a stub service, in this process, that answers
// every request at once with status and body, and returns the gateway, a client for its
// public listener and a test key of acct_bench.
func benchStack(b *testing.B, status int, body, logLevel string) (*stack, *fasthttp.HostClient, apiKey) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	svc := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetStatusCode(status)
		ctx.SetBodyString(body)
	}}
	go func() { _ = svc.Serve(ln) }()
	b.Cleanup(func() { _ = svc.Shutdown() })
	url := "http://" + ln.Addr().String()
	s := startStack(b, map[string]string{
		"VERIFICATION_URL": url, "COLLECTIONS_URL": url, "PAYMENTS_URL": url, "WEBHOOKS_URL": url, "LOG_LEVEL": logLevel,
	})
	return s, &fasthttp.HostClient{Addr: s.proc.Addrs["public"], MaxConns: 1024}, s.createKey(b, "acct_bench", false)
}

// hammer sends requests from parallel goroutines for the whole benchmark: each goroutine's
// request is made once by setup and touched by each (may be nil) before every send; every
// answer must have status want. It reports req/s.
func hammer(b *testing.B, client *fasthttp.HostClient, want int, setup, each func(*fasthttp.Request)) {
	b.Helper()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		setup(req)
		for pb.Next() {
			if each != nil {
				each(req)
			}
			if err := client.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			if resp.StatusCode() != want {
				b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkAuthProxy measures the gateway's hot path: an authenticated GET (key cache warm,
// one key) forwarded to a service that answers a fixed 200-byte JSON body at once. The service
// runs in the same process, so the figure is the gateway's own cost plus one loopback hop.
// Store: the embedded FerretDB, one key in the collection (the cache absorbs lookups).
//
//	go test -run '^$' -bench AuthProxy -benchtime 5s .
func BenchmarkAuthProxy(b *testing.B) {
	s, client, key := benchStack(b, 200,
		`{"id":"we_01h0000000000000000000000","object":"webhook_endpoint","url":"https://example.com/hook","status":"enabled","enabled_events":["*"],"livemode":false,"created":1700000000}`,
		"info")
	hammer(b, client, 200, func(req *fasthttp.Request) {
		req.SetRequestURI(s.public + benchTarget)
		req.Header.Set("Authorization", "Bearer "+*key.Secret)
	}, nil)
}

// BenchmarkIdempotentPost measures a POST with a fresh Idempotency-Key per request and the
// account's rate limit evaluated (a per-key limit far above the load), against a service that
// answers at once: the gateway's cost of claiming the key, storing the answer and limiting.
// Redis is REDIS_URL's, else the embedded one (in this process, so its cost is included).
//
//	go test -run '^$' -bench IdempotentPost -benchtime 5s .
func BenchmarkIdempotentPost(b *testing.B) {
	for _, idem := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "idempotent+limited"}[idem], func(b *testing.B) {
			s, client, key := benchStack(b, 400,
				`{"error":{"type":"invalid_request_error","code":"parameter_invalid","param":"description"}}`, "warn")
			if idem {
				do(b, "POST", s.admin+"/admin/api_keys/"+key.ID, strings.NewReader(`{"rate_limit":1000000}`), jsonHeaders(testAdminToken))
			}
			var seq atomic.Int64
			var each func(*fasthttp.Request)
			if idem {
				each = func(req *fasthttp.Request) {
					req.Header.Set("Idempotency-Key", "bench-"+strconv.FormatInt(seq.Add(1), 10))
				}
			}
			hammer(b, client, 400, func(req *fasthttp.Request) {
				req.SetRequestURI(s.public + benchTarget)
				req.Header.SetMethod("POST")
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", "Bearer "+*key.Secret)
				req.SetBodyString(`{"description":5}`)
			}, each)
		})
	}
}
