package main

import (
	"net"
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
