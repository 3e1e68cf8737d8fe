package main

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkAuthProxy measures the gateway's hot path: an authenticated GET (key cache warm,
// one key) forwarded to a service that answers a fixed 200-byte JSON body at once. The service
// runs in the same process, so the figure is the gateway's own cost plus one loopback hop.
// Store: the embedded FerretDB, one key in the collection (the cache absorbs lookups).
//
//	go test -run '^$' -bench AuthProxy -benchtime 5s .
func BenchmarkAuthProxy(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"id":"we_01h0000000000000000000000","object":"webhook_endpoint","url":"https://example.com/hook","status":"enabled","enabled_events":["*"],"livemode":false,"created":1700000000}`)
	svc := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}}
	go func() { _ = svc.Serve(ln) }()
	b.Cleanup(func() { _ = svc.Shutdown() })
	url := "http://" + ln.Addr().String()

	s := startStack(b, map[string]string{
		"VERIFICATION_URL": url, "COLLECTIONS_URL": url, "PAYMENTS_URL": url, "WEBHOOKS_URL": url,
		"LOG_LEVEL": "info",
	})
	key := s.createKey(b, "acct_bench", false)
	client := &fasthttp.HostClient{Addr: s.proc.Addrs["public"], MaxConns: 1024}
	auth := "Bearer " + *key.Secret
	target := s.public + "/v1/webhook_endpoints/we_01h0000000000000000000000"

	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(target)
		req.Header.Set("Authorization", auth)
		for pb.Next() {
			if err := client.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			if resp.StatusCode() != 200 {
				b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
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
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			svc := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
				ctx.SetContentType("application/json")
				ctx.SetStatusCode(400)
				ctx.SetBodyString(`{"error":{"type":"invalid_request_error","code":"parameter_invalid","param":"description"}}`)
			}}
			go func() { _ = svc.Serve(ln) }()
			b.Cleanup(func() { _ = svc.Shutdown() })
			url := "http://" + ln.Addr().String()
			s := startStack(b, map[string]string{
				"VERIFICATION_URL": url, "COLLECTIONS_URL": url, "PAYMENTS_URL": url, "WEBHOOKS_URL": url, "LOG_LEVEL": "warn",
			})
			key := s.createKey(b, "acct_bench", false)
			if idem {
				do(b, "POST", s.admin+"/admin/api_keys/"+key.ID, strings.NewReader(`{"rate_limit":1000000}`), jsonHeaders(testAdminToken))
			}
			client := &fasthttp.HostClient{Addr: s.proc.Addrs["public"], MaxConns: 1024}
			auth := "Bearer " + *key.Secret
			target := s.public + "/v1/webhook_endpoints/we_01h0000000000000000000000"
			var seq atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(target)
				req.Header.SetMethod("POST")
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", auth)
				req.SetBodyString(`{"description":5}`)
				for pb.Next() {
					if idem {
						req.Header.Set("Idempotency-Key", "bench-"+strconv.FormatInt(seq.Add(1), 10))
					}
					if err := client.Do(req, resp); err != nil {
						b.Error(err)
						return
					}
					if resp.StatusCode() != 400 {
						b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
