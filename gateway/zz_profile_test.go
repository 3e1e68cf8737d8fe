package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/servicetest"
)

func TestZZProfileEdge(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	body := []byte(`{"id":"we_01h0000000000000000000000","object":"webhook_endpoint","url":"https://example.com/hook","status":"enabled","enabled_events":["*"],"livemode":false,"created":1700000000}`)
	go (&fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetContentType("application/json"); ctx.SetBody(body) }}).Serve(ln)
	stub := "http://" + ln.Addr().String()
	mongo := testkit.Mongo(t)
	env := map[string]string{
		"GATEWAY_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "ADMIN_TOKEN": testAdminToken,
		"MONGODB_URI": mongo.URI, "MONGODB_DATABASE": mongo.Database, "REDIS_URL": testkit.Redis(t),
		"INTERNAL_AUTH_SECRET": testSecret, "VERIFICATION_URL": stub, "COLLECTIONS_URL": stub, "PAYMENTS_URL": stub, "WEBHOOKS_URL": stub,
		"GATEWAY_RATE_LIMIT_TEST": "1000000", "GATEWAY_AUTH_FAILURE_LIMIT": "60",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01", "LOG_LEVEL": os.Getenv("ZZLEVEL"),
	}
	p := servicetest.Start(t, run, env, "public", "admin", "metrics")
	s := &stack{proc: p, public: p.URL("public"), admin: p.URL("admin")}
	key := s.createKey(t, "acct_prof", false)
	f, _ := os.Create("/tmp/edgeprof.out")
	pprof.StartCPUProfile(f)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "wrk", "-t2", "-c64", "-d8s", "--latency", "-H", "Authorization: Bearer "+*key.Secret, s.public+"/v1/webhook_endpoints/we_1").CombinedOutput()
	pprof.StopCPUProfile()
	f.Close()
	t.Logf("%s %v", out, err)
}
