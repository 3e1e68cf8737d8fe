package http

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/logging"
)

// What a service learns of the public address the client used: X-Forwarded-Host (the
// request's Host) and X-Forwarded-Proto (http on this plain listener), set by the gateway on
// API requests and hosted pages alike, whatever the client sent under those names. A hosted
// page also gets the browser's Cookie header; an API request never does. And the webhook
// portal's paths are a hosted page of webhooks-svc.
func TestForwardedHeaders(t *testing.T) {
	type seen struct{ host, proto, cookie, account, path string }
	var mu sync.Mutex
	var got []seen
	signer, err := identity.NewSigner([]byte("0123456789abcdef0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		id, err := signer.Verify(func(k string) string { return string(ctx.Request.Header.Peek(k)) }, string(ctx.Method()), string(ctx.Path()))
		if err != nil {
			ctx.SetStatusCode(401)
			return
		}
		h := &ctx.Request.Header
		mu.Lock()
		got = append(got, seen{string(h.Peek("X-Forwarded-Host")), string(h.Peek("X-Forwarded-Proto")), string(h.Peek("Cookie")), id.Account, string(ctx.Path())})
		mu.Unlock()
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{}`)
	}}
	go func() { _ = svc.Serve(ln) }()
	t.Cleanup(func() { _ = svc.Shutdown() })
	webhooks, err := upstream.New(upstream.Config{Name: "webhooks", URL: "http://" + ln.Addr().String(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	down, err := upstream.New(upstream.Config{Name: "down", URL: "http://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}

	keys := newBenchKeys()
	secret := domain.NewSecret(domain.KeySecret, false)
	k, err := domain.NewKey(ids.NewGenerator(nil).New(ids.APIKey), domain.KeySpec{Account: "acct_fwd"}, secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keys.put(k)
	gen := ids.NewGenerator(nil)
	log := logging.Logger(io.Discard, "gateway", slog.LevelInfo)
	svcApp := app.New(keys, log, app.Options{IDs: gen, Limiter: benchLimiter{},
		Limits: app.Limits{LivePerSecond: 1000, TestPerSecond: 1000, AuthFailuresPerMinute: 20}})
	client := listen(t, NewPublic(PublicConfig{
		Logger: log, Keys: svcApp, Limits: svcApp, Idempotency: svcApp, Signer: signer,
		Services:  Services{Verification: down, Collections: down, Payments: down, Webhooks: webhooks},
		BodyLimit: 1 << 20, UploadBodyLimit: 1 << 20, IDs: gen,
	}))
	send := func(method, path, key string) int {
		t.Helper()
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(method)
		req.SetRequestURI("http://api.example.test:8443" + path)
		req.Header.Set("X-Forwarded-Host", "evil.example")
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("Cookie", "portal_token=wpst_abc")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if method == "POST" {
			req.Header.SetContentType("application/json")
			req.SetBodyString(`{}`)
		}
		if err := client.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode()
	}
	if s := send("POST", "/v1/webhook_portal_sessions", secret); s != 200 {
		t.Fatalf("POST /v1/webhook_portal_sessions: %d", s)
	}
	if s := send("GET", "/portal/wps_1/deliveries/wd_1", ""); s != 200 {
		t.Fatalf("GET /portal/…: %d", s)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []seen{
		{"api.example.test:8443", "http", "", "acct_fwd", "/v1/webhook_portal_sessions"},
		{"api.example.test:8443", "http", "portal_token=wpst_abc", identity.HostedAccount, "/portal/wps_1/deliveries/wd_1"},
	}
	if len(got) != len(want) {
		t.Fatalf("the service got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d reached the service as %+v, want %+v", i, got[i], want[i])
		}
	}
}
