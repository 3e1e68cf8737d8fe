package http

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/apierr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/health"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// Authenticator checks secret keys (app.Service).
type Authenticator interface {
	// Authenticate returns the active key for secret, app.ErrUnauthenticated for any secret
	// that is not one, or another error when the key store cannot be asked. secret is a view
	// of the request's header, valid only during the call: Authenticate must not keep it.
	Authenticate(ctx context.Context, secret string) (domain.Key, error)
}

// Limits are the rate limits (app.Service).
type Limits interface {
	// RateLimit takes one request of the key for a read (GET, HEAD) or a write; ok false when
	// no limit applies (d.Unavailable: the limiter is unavailable and the policy refuses).
	RateLimit(ctx context.Context, k domain.Key, access domain.Access) (d app.RateDecision, ok bool)
	// Blocked reports whether a client address is blocked for failed authentications.
	Blocked(ip netip.Addr) (time.Duration, bool)
	// AuthFailed counts a failed authentication and reports whether the address is now
	// blocked, and for how long.
	AuthFailed(ctx context.Context, ip netip.Addr) (time.Duration, bool)
}

// Idempotency runs requests that carry an Idempotency-Key (app.Service).
type Idempotency interface {
	BeginIdempotent(ctx context.Context, sc app.IdempotencyScope, fp string) (app.Claim, *domain.IdempotencyRecord, error)
	CompleteIdempotent(ctx context.Context, c app.Claim, fp string, resp domain.StoredResponse)
	ReleaseIdempotent(ctx context.Context, c app.Claim)
}

// PublicConfig configures NewPublic.
type PublicConfig struct {
	Logger      *slog.Logger
	Keys        Authenticator
	Limits      Limits
	Idempotency Idempotency
	Signer      *identity.Signer
	Services    Services
	// BodyLimit bounds buffered (JSON) bodies; UploadBodyLimit bounds streamed uploads.
	BodyLimit       int
	UploadBodyLimit int
	IDs             *ids.Generator
	TracerProvider  trace.TracerProvider
	Propagator      propagation.TextMapPropagator
	Sampler         sdktrace.Sampler // fiberx.Config.Sampler
	// MeterProvider records the requests' rate, errors and duration per resource; nil
	// records nothing.
	MeterProvider metric.MeterProvider
	// Checks are the /readyz dependencies.
	Checks []health.Check
	// Documents are served to anyone, before authentication: the API's contract and its
	// reference page.
	Documents []Document
	// HostedLimits rate-limits the hosted pages per client address (hosted.go); nil: no limit.
	HostedLimits HostedLimits
}

type public struct {
	log         *slog.Logger
	keys        Authenticator
	limits      Limits
	idem        Idempotency
	signer      *identity.Signer
	services    Services
	bodyLimit   int
	uploadLimit int
	drainLimit  int
	tracer      trace.Tracer
	propagator  propagation.TextMapPropagator
	copyBufs    sync.Pool // *[]byte buffers for reading bodies
	// hosted are the hosted pages (hosted.go), served without an API key.
	hosted       []hostedPage
	hostedLimits HostedLimits
}

// NewPublic returns the public listener's app.
func NewPublic(cfg PublicConfig) *fiber.App {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	prop := cfg.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator()
	}
	p := &public{
		log:         cfg.Logger,
		keys:        cfg.Keys,
		limits:      cfg.Limits,
		idem:        cfg.Idempotency,
		signer:      cfg.Signer,
		services:    cfg.Services,
		bodyLimit:   cfg.BodyLimit,
		uploadLimit: cfg.UploadBodyLimit,
		drainLimit:  cfg.BodyLimit,
		tracer:      tp.Tracer("rentalplatform/gateway"),
		propagator:  prop,
		// hosted.go
		hosted:       hostedPages(cfg.Services),
		hostedLimits: cfg.HostedLimits,
	}
	p.copyBufs.New = func() any { b := make([]byte, 16<<10); return &b }
	// Every request passes the same catch-all handler (serve), whose Fiber route is "/"; the
	// route is named from the path instead.
	routes := newRouteNames()
	app := fiberx.New(fiberx.Config{
		Service:        "gateway",
		Logger:         cfg.Logger,
		BodyLimit:      cfg.BodyLimit,
		TracerProvider: cfg.TracerProvider,
		Propagator:     cfg.Propagator,
		Sampler:        cfg.Sampler,
		MeterProvider:  cfg.MeterProvider,
		Listener:       "public",
		Route:          func(c *fiber.Ctx) string { return p.routeName(c.Path(), routes) },
		RequestIDs:     cfg.IDs,
	})
	// Bodies are read by the handler, not by the server: the limit depends on the route, and
	// uploads go to the service as they arrive instead of being held whole in memory. The read
	// buffer bounds the request line and headers (publicReadBuffer). fiberx does not expose
	// these settings, so they are set on its fasthttp server directly.
	srv := app.Server()
	srv.StreamRequestBody = true
	srv.DisablePreParseMultipartForm = true
	srv.ReadBufferSize = publicReadBuffer
	srv.HeaderReceived = uploadReadTimeout
	guardServer(app, cfg.IDs)

	app.Use(p.guardBody)
	health.Health(app, cfg.Logger, cfg.Checks...)
	serveDocuments(app, cfg.Documents)
	app.Use(p.serve)
	return app
}

// uploadReadTimeout gives an upload's request the read timeout the service behind gives it
// (fiberx.StreamedBodyReadTimeout), once its headers are in: the listener's own (a minute)
// bounds the headers and every other request, and a 25 MiB file from a slow client, or into a
// busy store, may take longer (CI's TestCollectionCases got 400 body_unreadable when its
// upload outlasted the minute on a loaded machine).
func uploadReadTimeout(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if !h.IsPost() {
		return fasthttp.RequestConfig{}
	}
	path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	if rest, ok := bytes.CutPrefix(path, []byte(apiPrefix)); ok && isUpload(string(rest)) {
		return fasthttp.RequestConfig{ReadTimeout: fiberx.StreamedBodyReadTimeout}
	}
	return fasthttp.RequestConfig{}
}

func (p *public) serve(c *fiber.Ctx) error {
	// Nothing downstream reads these, since the forwarded request is built from an allow-list;
	// deleting them anyway keeps a forged identity out of anything that inspects the request.
	for _, h := range identity.Headers {
		c.Request().Header.Del(h)
	}
	// Hosted pages (hosted.go) take no API key: their service checks their own credential.
	if page, ok := p.hostedPage(c.Path()); ok {
		return p.serveHosted(c, page)
	}
	key, err := p.authenticate(c)
	if err != nil {
		return err
	}
	access := domain.AccessWrite
	if m := c.Method(); m == fiber.MethodGet || m == fiber.MethodHead {
		access = domain.AccessRead
	}
	if d, ok := p.limits.RateLimit(c.UserContext(), key, access); ok {
		if d.Unavailable {
			return limiterUnavailable(c)
		}
		setRateHeaders(c, d)
		if !d.Allowed {
			return rateLimited(c, d.RetryAfter)
		}
	}
	method, path := c.Method(), c.Path()
	rt, ok := p.services.match(path)
	if !ok {
		return routeMissing(method, path)
	}
	switch method {
	case fiber.MethodGet, fiber.MethodPost, fiber.MethodDelete:
		// A constant from here on: c.Method() points into a buffer the connection's next
		// request reuses, and the forward's span keeps the method past this request.
		method = fiberx.KnownMethod(method)
	case fiber.MethodHead:
		// HEAD is GET without the body (RFC 9110 §9.3.2): the service answers a GET, so the
		// headers are the GET's, and fasthttp leaves the body out of a HEAD's answer.
		method = fiber.MethodGet
	default:
		c.Set(fiber.HeaderAllow, allowedMethods)
		return methodNotAllowed(method, path)
	}
	if write := method != fiber.MethodGet; !key.Allows(rt.resource, write) {
		return permissionDenied(key, rt.resource, write)
	}
	idemKey, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	// A compressed body would reach the service undecoded, and inflating it here would undo
	// the size limit; the API takes plain bodies.
	if enc := c.Request().Header.Peek(fiber.HeaderContentEncoding); len(enc) > 0 && !bytes.EqualFold(enc, []byte("identity")) {
		return apierr.New(fiber.StatusUnsupportedMediaType, apierr.InvalidRequest, codeContentEncoding,
			"Request bodies must not be compressed (Content-Encoding is not supported).")
	}
	return p.forward(c, key, rt, method, path, idemKey)
}

// authenticate answers every bad credential with the same 401, and a client address that
// keeps failing with 429 before its keys are even looked up.
func (p *public) authenticate(c *fiber.Ctx) (domain.Key, error) {
	ip := clientIP(c)
	if wait, blocked := p.limits.Blocked(ip); blocked {
		return domain.Key{}, authBlocked(c, wait)
	}
	err := app.ErrUnauthenticated
	var k domain.Key
	if secret, ok := bearer(c.Request().Header.Peek(fiber.HeaderAuthorization)); ok {
		k, err = p.keys.Authenticate(c.UserContext(), secret)
	}
	switch {
	case err == nil:
		return k, nil
	case errors.Is(err, app.ErrUnauthenticated):
		if wait, blocked := p.limits.AuthFailed(c.UserContext(), ip); blocked {
			return domain.Key{}, authBlocked(c, wait)
		}
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="Rental Platform API"`)
		return domain.Key{}, apierr.Unauthenticated()
	default:
		p.log.ErrorContext(c.UserContext(), "api key lookup failed", "error", err.Error(), "request_id", fiberx.RequestID(c))
		return domain.Key{}, keyStoreUnavailable()
	}
}

// clientIP returns the client's address, the one c.IP() names, as a value (c.IP() makes a
// string per request).
func clientIP(c *fiber.Ctx) netip.Addr {
	addr, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return addr.Unmap()
}

// bearer returns the token of an "Authorization: Bearer <token>" header. The scheme is
// case-insensitive (RFC 9110 §11.1). The token is a view of h, not a copy: it is valid only
// while h is.
func bearer(h []byte) (string, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || !bytes.EqualFold(h[:len(scheme)], []byte(scheme)) {
		return "", false
	}
	tok := bytes.TrimSpace(h[len(scheme):])
	if len(tok) == 0 {
		return "", false
	}
	return unsafe.String(&tok[0], len(tok)), true
}

const headerLastEventID = "Last-Event-ID"

// forwardSpan returns the context of a call to service: a span of its own only when the
// request's span records (the caller ends it then); otherwise the request's span context,
// which the service gets unsampled and samples out too.
func (p *public) forwardSpan(c *fiber.Ctx, service *upstream.Upstream, method string) (context.Context, trace.Span) {
	ctx, span := c.UserContext(), trace.SpanFromContext(c.UserContext())
	if span.IsRecording() {
		ctx, span = p.tracer.Start(ctx, "forward "+service.Name(),
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("rental.upstream", service.Name()), attribute.String("http.request.method", method)))
	}
	return ctx, span
}

// forward signs the request, sends it to the service and copies the answer back. A POST with
// an Idempotency-Key runs at most once per key: see idempotency.go.
func (p *public) forward(c *fiber.Ctx, key domain.Key, rt route, method, path, idemKey string) error {
	out := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(out)
	defer fasthttp.ReleaseResponse(resp)

	in := &c.Request().Header
	out.Header.SetMethod(method)
	rt.service.SetURI(out, path, c.Request().URI().QueryString())
	if v := in.ContentType(); len(v) > 0 {
		out.Header.SetContentTypeBytes(v)
	}
	if v := in.Peek(fiber.HeaderAccept); len(v) > 0 {
		out.Header.SetBytesV(fiber.HeaderAccept, v)
	}
	if v := in.UserAgent(); len(v) > 0 {
		out.Header.SetUserAgentBytes(v)
	}
	// The event stream's resume point (GET /v1/events/stream).
	if v := in.Peek(headerLastEventID); len(v) > 0 {
		out.Header.SetBytesV(headerLastEventID, v)
	}
	setForwarded(c, &out.Header)

	upload := rt.upload && method == fiber.MethodPost
	var idem *idempotentRun
	if method == fiber.MethodPost && idemKey != "" {
		idem = p.newIdempotentRun(c, key, path, idemKey, upload)
		// Released unless completed below: an error return, a panic, an unreachable service.
		defer idem.release()
	}
	var body *bodyReader
	var err error
	if idem != nil {
		var done bool
		body, done, err = idem.begin(out)
		if err != nil || done {
			return err
		}
	} else if body, err = p.attachBody(c, out, upload, nil); err != nil {
		return err
	}

	ctx, span := p.forwardSpan(c, rt.service, method)
	if span.IsRecording() {
		defer span.End()
	}
	fiberx.InjectTraceContext(ctx, p.propagator, &out.Header)
	signRequest(p.signer, &out.Header, identity.Identity{
		Account:        key.Account(),
		Livemode:       key.Livemode(),
		RequestID:      fiberx.RequestID(c),
		IdempotencyKey: idemKey,
	}, method, path)

	failed := func(err error) error {
		if span.IsRecording() {
			span.RecordError(err)
			span.SetStatus(codes.Error, "upstream call failed")
		}
		// A streamed body that failed on the client's side is the client's error, whatever
		// the service connection then reported.
		if body != nil && body.err != nil {
			return body.clientError(p.uploadLimit)
		}
		p.log.WarnContext(ctx, "upstream call failed", "upstream", rt.service.Name(), "error", err.Error(),
			"request_id", fiberx.RequestID(c), "api_key", key.ID(),
			"method", method, "path", path)
		return fromUpstream(err)
	}
	if rt.download && method == fiber.MethodGet {
		// A file or the event stream: passed on as it arrives, never held whole.
		sr, err := rt.service.Stream(out)
		if err != nil {
			return failed(err)
		}
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("http.response.status_code", sr.Status))
		}
		copyStreamed(c, sr)
		return nil
	}
	if err := rt.service.Do(out, resp); err != nil {
		return failed(err)
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode()))
	}
	copyResponse(c, resp)
	if idem != nil {
		idem.complete(resp, body)
	}
	return nil
}

// The public address the client used, as the gateway passes it to services (the links a
// service makes, such as a webhook portal session's url, point there).
const (
	headerForwardedHost  = "X-Forwarded-Host"
	headerForwardedProto = "X-Forwarded-Proto"
)

// setForwarded sets X-Forwarded-Host (the request's Host) and X-Forwarded-Proto (https when
// the connection is TLS, else http) on a request to a service. They are the gateway's own
// reading of the request: whatever the client sent in headers of those names is never passed
// on (a forwarded request is built from an allow-list), so a client cannot make a service
// believe another address.
func setForwarded(c *fiber.Ctx, h *fasthttp.RequestHeader) {
	if host := c.Request().Host(); len(host) > 0 {
		h.SetBytesV(headerForwardedHost, host)
	}
	proto := "http"
	if c.Context().IsTLS() {
		proto = "https"
	}
	h.Set(headerForwardedProto, proto)
}

// signRequest sets the identity headers (identity.Signer.Sign) on a request to a service,
// without allocating: the gateway signs every request it forwards.
func signRequest(s *identity.Signer, h *fasthttp.RequestHeader, id identity.Identity, method, path string) {
	var tsBuf [20]byte
	ts := strconv.AppendInt(tsBuf[:0], s.Timestamp(), 10)
	h.Set(identity.HeaderAccount, id.Account)
	h.Set(identity.HeaderLivemode, strconv.FormatBool(id.Livemode))
	h.Set(identity.HeaderRequestID, id.RequestID)
	if id.IdempotencyKey != "" {
		h.Set(identity.HeaderIdempotencyKey, id.IdempotencyKey)
	}
	h.SetBytesV(identity.HeaderTimestamp, ts)
	var sig [identity.SigLen]byte
	h.SetBytesV(identity.HeaderSignature, s.AppendSignature(sig[:0], ts, method, path, id))
}

// copyResponse gives the client the service's status, body and end-to-end headers. Headers
// the gateway owns (Request-Id, trace context, Date, Server) or that describe the hop
// (Connection and friends, Content-Length) are the gateway's own.
func copyResponse(c *fiber.Ctx, resp *fasthttp.Response) {
	c.Status(resp.StatusCode())
	dst := &c.Response().Header
	for k, v := range resp.Header.All() {
		if !hopHeader(k) {
			dst.AddBytesKV(k, v)
		}
	}
	c.Response().SetBody(resp.Body())
}

// copyStreamed is copyResponse for a streamed answer: the body goes to the client as it
// arrives, and is closed once sent (or when the client goes).
func copyStreamed(c *fiber.Ctx, sr *upstream.Streamed) {
	c.Status(sr.Status)
	dst := &c.Response().Header
	for k, vs := range sr.Header {
		if hopHeader([]byte(k)) {
			continue
		}
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
	size := int(sr.ContentLength)
	if size < 0 {
		size = -1 // chunked
	}
	c.Response().SetBodyStream(sr.Body, size)
}

// hopHeader reports whether a response header stays at the gateway. fasthttp hands keys over
// in canonical form.
func hopHeader(k []byte) bool {
	switch string(k) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length",
		"Date", "Server", fiberx.HeaderRequestID, "Traceparent", "Tracestate", "X-Request-Id":
		return true
	}
	return bytes.HasPrefix(k, []byte("X-Rental-"))
}
