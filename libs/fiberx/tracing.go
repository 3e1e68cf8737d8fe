package fiberx

import (
	"context"
	"encoding/hex"
	"iter"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"rentalplatform/libs/telemetry"
)

// W3C trace-context headers, in fasthttp's canonical form.
const (
	headerTraceparent = "Traceparent"
	headerTracestate  = "Tracestate"
)

// serverTracer is the server-span middleware. It does per request only what the span needs:
// the trace context is read from and written to the fasthttp headers directly; a span is asked
// of the SDK only when the sampler records the request (with a parent-based 1 % sampler, one
// request in a hundred), and only a recording span gets attributes and a name. An unsampled
// request still gets a span context of its own (a fresh span id, the parent's trace id or a new
// one), which the logs carry, the response's traceparent names and the next hop receives, so
// the services sample as the gateway did.
//
// Other propagated fields (baggage) take the general path through the propagator, only when a
// request carries them.
type serverTracer struct {
	tracer  trace.Tracer
	sampler sdktrace.Sampler // nil: ask the tracer for every request
	prop    propagation.TextMapPropagator
	// others are the propagator's fields besides traceparent and tracestate ("baggage").
	others []string
	route  func(*fiber.Ctx) string
}

func newServerTracer(tp trace.TracerProvider, sampler sdktrace.Sampler, prop propagation.TextMapPropagator, route func(*fiber.Ctx) string) *serverTracer {
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	t := &serverTracer{tracer: tp.Tracer("rentalplatform/libs/fiberx"), sampler: sampler, prop: prop, route: route}
	for _, f := range prop.Fields() {
		if !strings.EqualFold(f, headerTraceparent) && !strings.EqualFold(f, headerTracestate) {
			t.others = append(t.others, f)
		}
	}
	return t
}

func (t *serverTracer) handle(c *fiber.Ctx) error {
	if isHealth(c) {
		return c.Next()
	}
	h := &c.Request().Header
	base := c.UserContext()
	general := false
	for _, f := range t.others {
		if len(h.Peek(f)) > 0 {
			general = true
			break
		}
	}
	parent := base
	var psc trace.SpanContext
	if general {
		parent = t.prop.Extract(base, requestCarrier(h))
		psc = trace.SpanContextFromContext(parent)
	} else if tp := h.Peek(headerTraceparent); len(tp) > 0 {
		if psc = parseTraceparent(tp, h.Peek(headerTracestate)); psc.IsValid() {
			parent = trace.ContextWithRemoteSpanContext(base, psc)
		}
	}

	method := KnownMethod(c.Method())
	var ctx context.Context
	var span trace.Span // nil unless recording
	if t.sampler == nil {
		var s trace.Span
		ctx, s = t.tracer.Start(parent, method, trace.WithSpanKind(trace.SpanKindServer))
		if s.IsRecording() {
			span = s
		}
	} else {
		tid := psc.TraceID()
		if !psc.IsValid() {
			tid = telemetry.NewTraceID()
		}
		res := t.sampler.ShouldSample(sdktrace.SamplingParameters{
			ParentContext: parent, TraceID: tid, Name: method, Kind: trace.SpanKindServer,
		})
		if res.Decision == sdktrace.Drop {
			// What the SDK would make of it, without asking it: a span context that is not
			// sampled, child of the parent.
			ctx = trace.ContextWithSpanContext(parent, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: tid, SpanID: telemetry.NewSpanID(), TraceState: res.Tracestate,
				TraceFlags: psc.TraceFlags() &^ trace.FlagsSampled,
			}))
		} else {
			start := parent
			if !psc.IsValid() {
				start = telemetry.ContextWithTraceID(parent, tid) // the id just sampled
			}
			ctx, span = t.tracer.Start(start, method, trace.WithSpanKind(trace.SpanKindServer))
		}
	}
	if span != nil {
		span.SetAttributes(
			attribute.String("http.request.method", method),
			attribute.String("url.path", strings.Clone(c.Path())),
			attribute.String("url.scheme", c.Protocol()),
			attribute.String("network.protocol.version", protocolVersion(h)),
			attribute.String("client.address", c.IP()),
			attribute.String("user_agent.original", string(h.UserAgent())),
		)
	}
	c.SetUserContext(ctx)

	err := c.Next()
	if err != nil {
		// The access log renders errors itself; this is one it could not.
		if span != nil {
			span.RecordError(err)
		}
		_ = c.App().Config().ErrorHandler(c, err)
	}
	if general {
		t.prop.Inject(ctx, responseCarrier(&c.Response().Header))
	} else {
		SetResponseTraceContext(&c.Response().Header, trace.SpanContextFromContext(ctx))
	}
	if span != nil {
		status := c.Response().StatusCode()
		route := t.route(c)
		span.SetName(method + " " + route)
		span.SetAttributes(attribute.Int("http.response.status_code", status), attribute.String("http.route", route))
		if status >= 500 {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
	return nil
}

func protocolVersion(h *fasthttp.RequestHeader) string {
	if h.IsHTTP11() {
		return "1.1"
	}
	return "1.0"
}

// InjectTraceContext writes ctx's trace context into an outgoing request: traceparent and
// tracestate straight into the header, or, when ctx carries baggage, everything prop injects.
func InjectTraceContext(ctx context.Context, prop propagation.TextMapPropagator, h *fasthttp.RequestHeader) {
	if prop != nil && baggage.FromContext(ctx).Len() > 0 {
		prop.Inject(ctx, requestCarrier(h))
		return
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	buf := traceparent(sc)
	h.SetBytesV(headerTraceparent, buf[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		h.Set(headerTracestate, ts.String())
	}
}

// SetResponseTraceContext names the request's span in the response (traceparent, and
// tracestate when there is one), as the W3C trace-context response convention does.
func SetResponseTraceContext(h *fasthttp.ResponseHeader, sc trace.SpanContext) {
	if !sc.IsValid() {
		return
	}
	buf := traceparent(sc)
	h.SetBytesV(headerTraceparent, buf[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		h.Set(headerTracestate, ts.String())
	}
}

// traceparentLen is the length of a version-00 traceparent.
const traceparentLen = 2 + 1 + 32 + 1 + 16 + 1 + 2

// traceparent is sc's traceparent header value.
func traceparent(sc trace.SpanContext) (buf [traceparentLen]byte) {
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := [1]byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))}
	buf[0], buf[1], buf[2] = '0', '0', '-'
	hex.Encode(buf[3:35], tid[:])
	buf[35] = '-'
	hex.Encode(buf[36:52], sid[:])
	buf[52] = '-'
	hex.Encode(buf[53:55], flags[:])
	return buf
}

// parseTraceparent reads a traceparent header (and its tracestate) as the OpenTelemetry W3C
// propagator does, returning a remote span context, or an invalid one when the header is not
// well formed.
func parseTraceparent(tp, ts []byte) trace.SpanContext {
	// version "-" trace-id "-" parent-id "-" flags, and for versions above 00 maybe more.
	if len(tp) < traceparentLen || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return trace.SpanContext{}
	}
	var ver, flags [1]byte
	var scc trace.SpanContextConfig
	if !unhex(ver[:], tp[0:2]) || ver[0] == 0xff || !unhex(scc.TraceID[:], tp[3:35]) ||
		!unhex(scc.SpanID[:], tp[36:52]) || !unhex(flags[:], tp[53:55]) {
		return trace.SpanContext{}
	}
	if ver[0] == 0 && (len(tp) != traceparentLen || flags[0] > 3) {
		return trace.SpanContext{}
	}
	if ver[0] != 0 && len(tp) > traceparentLen && tp[traceparentLen] != '-' {
		return trace.SpanContext{}
	}
	scc.TraceFlags = trace.TraceFlags(flags[0]) & (trace.FlagsSampled | trace.FlagsRandom)
	scc.Remote = true
	if len(ts) > 0 {
		scc.TraceState, _ = trace.ParseTraceState(string(ts))
	}
	sc := trace.NewSpanContext(scc)
	if !sc.IsValid() {
		return trace.SpanContext{}
	}
	return sc
}

// unhex decodes src (two hex digits per byte, either case) into dst.
func unhex(dst, src []byte) bool {
	for i := range dst {
		hi, ok1 := hexDigit(src[2*i])
		lo, ok2 := hexDigit(src[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// carrier lets a propagator read and write fasthttp headers (the general path: baggage).
type carrier[H interface {
	Peek(key string) []byte
	Set(key, value string)
	All() iter.Seq2[[]byte, []byte]
}] struct{ h H }

func (c carrier[H]) Get(key string) string { return string(c.h.Peek(key)) }
func (c carrier[H]) Set(key, value string) { c.h.Set(key, value) }
func (c carrier[H]) Keys() []string {
	var keys []string
	for k := range c.h.All() {
		keys = append(keys, string(k))
	}
	return keys
}

func requestCarrier(h *fasthttp.RequestHeader) carrier[*fasthttp.RequestHeader] {
	return carrier[*fasthttp.RequestHeader]{h}
}

func responseCarrier(h *fasthttp.ResponseHeader) carrier[*fasthttp.ResponseHeader] {
	return carrier[*fasthttp.ResponseHeader]{h}
}
