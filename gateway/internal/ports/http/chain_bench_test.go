package http

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/logging"
	"rentalplatform/libs/telemetry"
)

// BenchmarkPublicChain measures the public listener's whole handler chain as production runs
// it: authentication (key cache warm), the account's rate limit (a local lease, refilled from
// an in-memory limiter), routing, the signed forward to a service in this process and the copy
// of its answer, with a parent-based 1 % sampler, metrics on and info access logs into a
// discarding handler. It reports allocations per request: the gateway's own, since the
// fasthttp client and the stub service allocate nothing per request.
//
//	go test -run '^$' -bench PublicChain -benchmem ./gateway/internal/ports/http/
func BenchmarkPublicChain(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
		parent  string
	}{
		{"sampled_1pct", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)), ""},
		{"parent_unsampled", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ch := newBenchChain(b, c.sampler)
			runChain(b, ch.client, func(req *fasthttp.Request) {
				req.SetRequestURI("http://gateway/v1/webhook_endpoints/we_01h0000000000000000000000")
				req.Header.Set("Authorization", "Bearer "+ch.secret)
				req.Header.Set("User-Agent", "bench")
				if c.parent != "" {
					req.Header.Set("Traceparent", c.parent)
				}
			})
		})
	}
}

// BenchmarkBareFiberProxy is the reference for BenchmarkPublicChain: a Fiber app without
// middleware forwarding through one fasthttp.HostClient to the same stub service, the floor a
// Fiber gateway can reach. The difference in ns/op is the gateway's own work.
func BenchmarkBareFiberProxy(b *testing.B) {
	up := stubService(b)
	client := &fasthttp.HostClient{Addr: up, MaxConns: 512}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		out, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(out)
		defer fasthttp.ReleaseResponse(resp)
		out.Header.SetMethodBytes(c.Request().Header.Method())
		out.SetRequestURIBytes(c.Request().Header.RequestURI())
		out.SetHost(up)
		if err := client.Do(out, resp); err != nil {
			return err
		}
		c.Status(resp.StatusCode())
		c.Response().Header.SetContentTypeBytes(resp.Header.ContentType())
		c.Response().SetBody(resp.Body())
		return nil
	})
	runChain(b, listen(b, app), func(req *fasthttp.Request) {
		req.SetRequestURI("http://gateway/v1/webhook_endpoints/we_01h0000000000000000000000")
		req.Header.Set("User-Agent", "bench")
	})
}

// runChain sends requests made by setup from parallel clients (64 connections, as the edge
// comparison's wrk), every answer a 200, after a warm-up.
func runChain(b *testing.B, client *fasthttp.HostClient, setup func(*fasthttp.Request)) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	setup(req)
	for range 200 { // warm the key cache, the lease and the pools
		if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
			b.Fatalf("warm-up: %v %d %s", err, resp.StatusCode(), resp.Body())
		}
	}
	fasthttp.ReleaseRequest(req)
	fasthttp.ReleaseResponse(resp)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		setup(req)
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
}

type benchChain struct {
	client *fasthttp.HostClient
	secret string
}

func newBenchChain(b testing.TB, sampler sdktrace.Sampler, opts ...sdktrace.TracerProviderOption) *benchChain {
	b.Helper()
	svcAddr := stubService(b)
	up, err := upstream.New(upstream.Config{Name: "webhooks", URL: "http://" + svcAddr, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}

	log := logging.Logger(io.Discard, "gateway", slog.LevelInfo)
	keys := newBenchKeys()
	secret := domain.NewSecret(domain.KeySecret, false)
	k, err := domain.NewKey(ids.NewGenerator(nil).New(ids.APIKey), domain.KeySpec{Account: "acct_bench"}, secret, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	keys.put(k)
	gen := ids.NewGenerator(nil)
	svcApp := app.New(keys, log, app.Options{
		IDs:     gen,
		Limiter: benchLimiter{},
		Limits:  app.Limits{LivePerSecond: 1_000_000, TestPerSecond: 1_000_000, AuthFailuresPerMinute: 20},
	})
	signer, err := identity.NewSigner([]byte("0123456789abcdef0123456789abcdef"), nil)
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSampler(sampler), sdktrace.WithIDGenerator(telemetry.IDGenerator())}, opts...)...)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	pub := NewPublic(PublicConfig{
		Logger: log, Keys: svcApp, Limits: svcApp, Idempotency: svcApp, Signer: signer,
		Services:  Services{Verification: up, Collections: up, Payments: up, Webhooks: up},
		BodyLimit: 1 << 20, UploadBodyLimit: 25 << 20, IDs: gen,
		TracerProvider: tp, Sampler: sampler,
		Propagator:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		MeterProvider: mp,
	})
	return &benchChain{client: listen(b, pub), secret: secret}
}

// stubService starts a service that answers every request with a fixed JSON body, and
// returns its address.
func stubService(b testing.TB) string {
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
	return ln.Addr().String()
}

// listen serves app on a loopback port and returns a client for it.
func listen(b testing.TB, app *fiber.App) *fasthttp.HostClient {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	b.Cleanup(func() { _ = app.Shutdown() })
	return &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 64}
}

// benchLimiter grants every batch in full.
type benchLimiter struct{}

func (benchLimiter) Take(_ context.Context, _ string, rate, burst int, _ time.Duration, n int) (app.RateDecision, error) {
	return app.RateDecision{Allowed: true, Granted: n, Limit: burst, Remaining: burst - n, ResetAfter: time.Second}, nil
}

// benchKeys is a key repository in memory; authentication only reads it.
type benchKeys struct {
	mu sync.Mutex
	m  map[domain.Hash]domain.Key
}

func newBenchKeys() *benchKeys { return &benchKeys{m: map[domain.Hash]domain.Key{}} }

func (r *benchKeys) put(k domain.Key) {
	r.mu.Lock()
	r.m[k.Hash()] = k
	r.mu.Unlock()
}

func (r *benchKeys) ByHash(_ context.Context, h domain.Hash) (domain.Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.m[h]; ok {
		return k, nil
	}
	return domain.Key{}, domain.KeyNotFound("")
}

func (r *benchKeys) TouchLastUsed(context.Context, string, time.Time) error { return nil }
func (r *benchKeys) Create(context.Context, domain.Key) error               { panic("unused") }
func (r *benchKeys) ByID(context.Context, string) (domain.Key, error)       { panic("unused") }
func (r *benchKeys) List(context.Context, string, listing.Params) ([]domain.Key, bool, error) {
	panic("unused")
}
func (r *benchKeys) Revoke(context.Context, string, time.Time) (domain.Key, error) { panic("unused") }
func (r *benchKeys) Roll(context.Context, domain.Key, domain.Key) error            { panic("unused") }
func (r *benchKeys) SetRateLimit(context.Context, string, *domain.RateLimit) (domain.Key, error) {
	panic("unused")
}
