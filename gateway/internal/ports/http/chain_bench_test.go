package http

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/config"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
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
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI("http://gateway/v1/webhook_endpoints/we_01h0000000000000000000000")
			req.Header.Set("Authorization", "Bearer "+ch.secret)
			req.Header.Set("User-Agent", "bench")
			if c.parent != "" {
				req.Header.Set("Traceparent", c.parent)
			}
			for range 100 { // warm the key cache, the lease and the pools
				ch.do(b, req, resp)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ch.do(b, req, resp)
			}
		})
	}
}

type benchChain struct {
	client *fasthttp.HostClient
	secret string
}

func (ch *benchChain) do(b *testing.B, req *fasthttp.Request, resp *fasthttp.Response) {
	if err := ch.client.Do(req, resp); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode() != 200 {
		b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
	}
}

func newBenchChain(b *testing.B, sampler sdktrace.Sampler) *benchChain {
	b.Helper()
	// The service: a fixed JSON answer.
	svcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"id":"we_01h0000000000000000000000","object":"webhook_endpoint","url":"https://example.com/hook","status":"enabled","enabled_events":["*"],"livemode":false,"created":1700000000}`)
	svc := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}}
	go func() { _ = svc.Serve(svcLn) }()
	b.Cleanup(func() { _ = svc.Shutdown() })
	up, err := upstream.New(upstream.Config{Name: "webhooks", URL: "http://" + svcLn.Addr().String(), Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}

	log := config.Logger(io.Discard, "gateway", slog.LevelInfo)
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
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithIDGenerator(telemetry.IDGenerator()))
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = pub.Listener(ln) }()
	b.Cleanup(func() { _ = pub.Shutdown() })
	return &benchChain{client: &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 64}, secret: secret}
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
