package http

import (
	"testing"

	"github.com/valyala/fasthttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestForwardSpanKeepsItsMethod sends a POST and then a GET on one connection and checks the
// POST's forward span still says POST: the method read from the request points into a buffer
// the connection's next request reuses, and a span keeps its attributes until it is exported.
func TestForwardSpanKeepsItsMethod(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	ch := newBenchChain(t, sdktrace.AlwaysSample(), sdktrace.WithSpanProcessor(rec))
	ch.client.MaxConns = 1
	send := func(method string) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(method)
		req.SetRequestURI("http://gateway/v1/webhook_endpoints")
		req.Header.Set("Authorization", "Bearer "+ch.secret)
		if method == fasthttp.MethodPost {
			req.Header.SetContentType("application/json")
			req.SetBodyString(`{"url":"https://example.com/hook","enabled_events":["*"]}`)
		}
		if err := ch.client.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			t.Fatalf("%s: %d %s", method, resp.StatusCode(), resp.Body())
		}
	}
	send(fasthttp.MethodPost)
	send(fasthttp.MethodGet)
	var got []string
	for _, s := range rec.Ended() {
		if s.Name() != "forward webhooks" {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == "http.request.method" {
				got = append(got, a.Value.AsString())
			}
		}
	}
	if len(got) != 2 || got[0] != "POST" || got[1] != "GET" {
		t.Fatalf("forward spans' methods %q; want [POST GET]", got)
	}
}
