// Package fiberx builds the Fiber app every program runs: the error envelope, gateway identity,
// tracing and metrics (tracing.go, metrics.go), access logs, streamed bodies and graceful
// serving. The gateway uses the same app builder without the identity check. What a handler
// reads of a request is package request's; the health endpoints are package health's.
package fiberx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// HeaderRequestID is the response header naming the request, on every response.
const HeaderRequestID = "Request-Id"

// Config configures New.
type Config struct {
	Service string
	Logger  *slog.Logger
	// Signer, when set, makes every route except /healthz and /readyz require a valid gateway
	// identity (401 otherwise).
	Signer *identity.Signer
	// HostedPages are the path prefixes ("/verify/") of the service's hosted pages: pages the
	// gateway serves to a browser without an API key, signed with the hosted-page identity
	// (identity.HostedAccount). A path under one of them requires that identity, and every
	// other path refuses it (401, as an invalid identity), so a hosted-page request never
	// reaches an API route and an API caller never reaches a hosted page. Only with Signer.
	HostedPages []string
	// BodyLimit is the largest request body accepted (413 above it); 0 means 1 MiB.
	BodyLimit int
	// TracerProvider and Propagator instrument requests; nil leaves them untraced.
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	// Sampler is TracerProvider's sampler (telemetry.Telemetry.Sampler), which must draw root
	// trace ids with telemetry.IDGenerator: requests the sampler drops then cost no span at
	// all (tracing.go). Nil asks the tracer provider for a span on every request.
	Sampler sdktrace.Sampler
	// MeterProvider records the requests' rate, errors and duration (metrics.go); nil records
	// nothing. Listener names the app in the metrics ("http", "public", "admin").
	MeterProvider metric.MeterProvider
	Listener      string
	// Route names a request's route in span names and metrics; nil is Fiber's matched route
	// (c.Route().Path, "/v1/webhook_endpoints/:id"). It must return one of a bounded set of
	// strings that outlive the request: the gateway, which matches its routes itself, names
	// them from a table.
	Route func(*fiber.Ctx) string
	// RequestIDs, when set, names requests that carry no gateway identity (the gateway
	// itself) with ids.Request ids.
	RequestIDs *ids.Generator
	// StreamBody, when set, makes the server stream request bodies instead of reading them
	// whole before the handler runs, and says which requests get the stream (file uploads).
	// Those handlers read c.Context().RequestBodyStream() themselves and bound what they read:
	// BodyLimit does not apply to them, and whatever they leave unread is dropped after them.
	// Every other request's body is still read whole under BodyLimit (413 above it) before
	// any handler runs, as without streaming.
	StreamBody func(*fiber.Ctx) bool
}

type localsKey int

// requestKey holds the request's *requestInfo.
const requestKey localsKey = 0

// requestInfo is what the middleware knows of a request, in one allocation: the identity and
// the request id, whose bytes a gateway-made id keeps in buf.
type requestInfo struct {
	identity  identity.Identity
	requestID string
	buf       [32 + ids.EncodedLen]byte
	// answer holds what a change made by the request rendered of its aggregate (Object).
	answer *events.Answer
}

// ReadTimeout bounds reading a whole request, headers and body, on a server whose bodies are
// read before the handler runs.
const ReadTimeout = 60 * time.Second

// StreamedBodyReadTimeout bounds reading a whole request whose body is streamed to the handler
// (an upload of up to 25 MiB): a slow client, or a busy store behind the handler, gets five
// minutes. A server in front of such a handler (the gateway) gives the same to those requests.
const StreamedBodyReadTimeout = 5 * time.Minute

// New returns a Fiber app with the platform's middleware installed.
func New(cfg Config) *fiber.App {
	if cfg.BodyLimit == 0 {
		cfg.BodyLimit = 1 << 20
	}
	log := cfg.Logger
	// The read timeout bounds a whole request, body included: a server that takes streamed
	// uploads (25 MiB files) gives a slow client, or a busy store, five minutes for one.
	readTimeout := ReadTimeout
	if cfg.StreamBody != nil {
		readTimeout = StreamedBodyReadTimeout
	}
	app := fiber.New(fiber.Config{
		AppName:               cfg.Service,
		DisableStartupMessage: true,
		BodyLimit:             cfg.BodyLimit,
		ReadTimeout:           readTimeout,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           120 * time.Second,
		ErrorHandler:          ErrorHandler(log),
		StreamRequestBody:     cfg.StreamBody != nil,
		// fasthttp would otherwise parse a multipart body of known length before the handler,
		// holding files of up to 16 MiB in memory: the streaming handler parses it itself.
		DisablePreParseMultipartForm: cfg.StreamBody != nil,
	})
	app.Use(recoverPanics(log))
	if cfg.StreamBody != nil {
		// Before tracing, so a body read whole is bounded before anything else reads it.
		app.Use(streamedBodies(cfg.StreamBody, cfg.BodyLimit))
	}
	route := cfg.Route
	if route == nil {
		route = func(c *fiber.Ctx) string { return c.Route().Path }
	}
	if cfg.TracerProvider != nil {
		app.Use(newServerTracer(cfg.TracerProvider, cfg.Sampler, cfg.Propagator, route).handle)
	}
	var metrics *serverMetrics
	if cfg.MeterProvider != nil {
		var err error
		if metrics, err = newServerMetrics(cfg.MeterProvider, cfg.Listener, route); err != nil {
			log.Error("HTTP server metrics are off", "error", err.Error())
			metrics = nil
		}
	}
	// Before the identity check, so a request refused by it is logged and measured too.
	app.Use(accessLog(log, metrics))
	app.Use(identify(cfg.Signer, cfg.HostedPages, cfg.RequestIDs, log))
	return app
}

// recoverPanics answers a handler's panic with the envelope and logs it with the request id
// (rather than Fiber's middleware, which knows neither).
func recoverPanics(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(c.UserContext(), "panic", "panic", fmt.Sprint(r), "request_id", RequestID(c), "path", c.Path())
				err = apierr.Internal()
			}
		}()
		return c.Next()
	}
}

// errHostedMismatch is a valid identity on the wrong kind of path: a hosted-page identity
// outside the hosted pages, or an API caller's on one (Config.HostedPages).
var errHostedMismatch = errors.New("identity not accepted on this path (hosted page or API)")

// identify gives every request its identity and request id: with signer, the gateway's signed
// identity, required on every route but the health checks (401 otherwise), and the hosted-page
// identity on hostedPages' paths only; without, an id of requestIDs' when set (the gateway's own
// requests). Every answer names the request id.
func identify(signer *identity.Signer, hostedPages []string, requestIDs *ids.Generator, log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if signer != nil && !isHealth(c) {
			id, err := signer.Verify(func(k string) string { return strings.Clone(c.Get(k)) }, c.Method(), c.Path())
			if err == nil && id.Hosted() != isHostedPage(c.Path(), hostedPages) {
				err = errHostedMismatch
			}
			if err != nil {
				log.WarnContext(c.UserContext(), "request without a valid gateway identity", "error", err.Error(), "path", c.Path(), "remote", c.IP())
				c.Locals(requestKey, &requestInfo{requestID: strings.Clone(c.Get(identity.HeaderRequestID))})
				if c.Request().IsBodyStream() {
					// Dropped unread (see streamedBodies).
					c.Request().ResetBody()
				}
				return apierr.New(401, apierr.Authentication, apierr.CodeIdentityInvalid,
					"This service only accepts requests forwarded by the gateway.")
			}
			info := &requestInfo{identity: id, requestID: id.RequestID}
			if c.Method() != fiber.MethodGet {
				// A change: its events' rendering of the object may be the answer (Object).
				var ctx context.Context
				ctx, info.answer = events.WithAnswer(c.UserContext())
				c.SetUserContext(ctx)
			}
			c.Locals(requestKey, info)
		} else if requestIDs != nil {
			info := &requestInfo{}
			id := requestIDs.Append(info.buf[:0], ids.Request)
			info.requestID = unsafe.String(&id[0], len(id)) // buf is never written again
			c.Locals(requestKey, info)
		}
		if id := RequestID(c); id != "" {
			c.Set(HeaderRequestID, id)
		}
		return c.Next()
	}
}

// streamedBodies gives the requests stream selects their body as a stream and reads every
// other body whole under limit. Anything that asks for c.Body() after the handler would read
// all of a stream into memory: so a streaming handler must read its body to the end or drop
// the rest (c.Request().ResetBody()) itself, as the identity check does for a request it
// refuses. The server then drains a small rest or closes the connection.
func streamedBodies(stream func(*fiber.Ctx) bool, limit int) fiber.Handler {
	return func(c *fiber.Ctx) error {
		req := c.Request()
		if !req.IsBodyStream() {
			return c.Next()
		}
		if stream(c) {
			defer req.ResetBody()
			return c.Next()
		}
		if req.Header.ContentLength() > limit {
			req.ResetBody()
			return fiber.ErrRequestEntityTooLarge
		}
		body, err := io.ReadAll(io.LimitReader(req.BodyStream(), int64(limit)+1))
		if err != nil {
			req.ResetBody()
			return apierr.New(400, apierr.InvalidRequest, apierr.CodeParameterInvalid, "The request body could not be read completely.")
		}
		if len(body) > limit {
			req.ResetBody()
			return fiber.ErrRequestEntityTooLarge
		}
		req.SetBodyRaw(body)
		return c.Next()
	}
}

// isHostedPage reports whether path is under one of the hosted pages' prefixes.
func isHostedPage(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func isHealth(c *fiber.Ctx) bool {
	p := c.Path()
	return p == "/healthz" || p == "/readyz"
}

// accessLog logs one line per request with its outcome, and measures it when metrics is not
// nil. Errors are rendered here, rather than after the middleware chain, so the logged status
// is the one the client gets. Health checks are neither logged nor measured: probes would
// drown the rest.
func accessLog(log *slog.Logger, metrics *serverMetrics) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if isHealth(c) {
			return c.Next()
		}
		start := time.Now()
		if metrics != nil {
			metrics.begin()
		}
		err := c.Next()
		if err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				return herr
			}
		}
		status := c.Response().StatusCode()
		took := time.Since(start)
		if metrics != nil {
			metrics.end(c, status, took)
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		ctx := c.UserContext()
		if h := log.Handler(); h.Enabled(ctx, level) {
			// The record is made here rather than by log.LogAttrs, which walks the stack for
			// the caller's position on every line: no handler of ours reports it.
			r := slog.NewRecord(time.Now(), level, "request", 0)
			r.AddAttrs(
				slog.String("request_id", RequestID(c)),
				slog.String("method", c.Method()),
				slog.String("path", c.Path()),
				slog.Int("status", status),
				slog.Duration("duration", took),
			)
			_ = h.Handle(ctx, r)
		}
		return nil
	}
}

// ErrorHandler renders any error as the envelope. *apierr.Error carries its own status; Fiber's
// own errors (no route, wrong method, body too large) are mapped to ours; anything else is an
// internal error, logged here once and never described to the client.
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		e := apierr.From(err)
		if e == nil {
			var fe *fiber.Error
			if errors.As(err, &fe) {
				e = fromFiber(c, fe)
			} else {
				log.ErrorContext(c.UserContext(), "internal error", "error", err.Error(),
					"request_id", RequestID(c), "path", c.Path())
				e = apierr.Internal()
			}
		}
		return c.Status(e.Status).JSON(e.Envelope(RequestID(c)))
	}
}

func fromFiber(c *fiber.Ctx, fe *fiber.Error) *apierr.Error {
	switch fe.Code {
	case fiber.StatusNotFound:
		return apierr.New(404, apierr.InvalidRequest, apierr.CodeRouteMissing,
			fmt.Sprintf("Unrecognized request URL (%s: %s).", c.Method(), c.Path()))
	case fiber.StatusMethodNotAllowed:
		return apierr.New(405, apierr.InvalidRequest, apierr.CodeMethodNotAllowed,
			fmt.Sprintf("Method %s is not allowed on %s.", c.Method(), c.Path()))
	case fiber.StatusRequestEntityTooLarge:
		return apierr.New(413, apierr.InvalidRequest, apierr.CodeBodyTooLarge, "The request body is too large.")
	}
	typ := apierr.InvalidRequest
	if fe.Code >= 500 {
		typ = apierr.API
	}
	code := strings.ReplaceAll(strings.ToLower(http.StatusText(fe.Code)), " ", "_")
	if code == "" {
		code = "error"
	}
	return apierr.New(fe.Code, typ, code, fe.Message)
}

// Identity returns the gateway identity of the request (zero outside identity-checked routes).
func Identity(c *fiber.Ctx) identity.Identity {
	if info, ok := c.Locals(requestKey).(*requestInfo); ok {
		return info.identity
	}
	return identity.Identity{}
}

// Object answers with a as JSON: the very bytes the events of the request's change hold when
// the change rendered a (events.Answer), so an object is rendered once per change; else
// render's rendering.
func Object[A, R any](c *fiber.Ctx, a A, render func(A) R) error {
	if info, ok := c.Locals(requestKey).(*requestInfo); ok {
		if b, ok := info.answer.For(a); ok {
			c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
			return c.Send(b)
		}
	}
	return c.JSON(render(a))
}

// RequestID returns the request's id, or "".
func RequestID(c *fiber.Ctx) string {
	if info, ok := c.Locals(requestKey).(*requestInfo); ok {
		return info.requestID
	}
	return ""
}

// Serve listens on addr, logs the bound address ("listening", with name and addr: tests and
// the local stack read it), and serves until ctx ends, then shuts down gracefully within
// shutdownTimeout. wrap, when not nil, wraps the listener before it serves: a listener that
// must see its connections' bytes (the gateway's, to tell a request line too long for the
// read buffer from headers too large) gets them without a copy of Serve.
func Serve(ctx context.Context, app *fiber.App, addr, name string, shutdownTimeout time.Duration, log *slog.Logger,
	wrap func(net.Listener) net.Listener) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s on %s: %w", name, addr, err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	// The local stack and the tests find the bound port in this line, so it is written at the
	// lowest level the logger lets through, never filtered out by LOG_LEVEL.
	level := slog.LevelInfo
	for level < slog.LevelError && !log.Enabled(ctx, level) {
		level += 4
	}
	log.Log(ctx, level, "listening", "listener", name, "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", name, err)
	case <-ctx.Done():
	}
	if err := app.ShutdownWithTimeout(shutdownTimeout); err != nil {
		return fmt.Errorf("shutdown %s: %w", name, err)
	}
	return nil
}

// Routes returns the app's routes as {method, path} pairs ("POST", "/v1/things/:id"), the HEAD
// routes Fiber adds beside each GET left out: a service's test compares its route table with
// the API's contract.
func Routes(app *fiber.App) [][2]string {
	var out [][2]string
	for _, r := range app.GetRoutes(true) {
		if r.Method != fiber.MethodHead {
			out = append(out, [2]string{r.Method, r.Path})
		}
	}
	return out
}
