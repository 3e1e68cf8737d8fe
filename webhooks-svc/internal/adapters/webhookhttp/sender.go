// Package webhookhttp makes delivery attempts: one signed HTTPS POST each, through a client
// that follows no redirects, bounds every attempt by the configured timeout and, unless told
// otherwise, refuses to connect to internal addresses whatever a name resolves to. An attempt
// that gets no response is reported by category (classify.go), with Go's own error kept
// aside for the service's log.
package webhookhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"rentalplatform/libs/netguard"
	"rentalplatform/libs/stdwebhooks"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
)

// UserAgent names the platform to receivers.
const UserAgent = "RentalPlatform-Webhooks/1.0"

// drainLimit is how much of a response body is read (and dropped) so the connection can be
// reused; a longer body costs the connection instead.
const drainLimit = 64 << 10

// Config configures the sender.
type Config struct {
	// Timeout bounds one attempt, from connecting to the end of the response headers.
	Timeout time.Duration
	// AllowPrivate lets attempts reach internal addresses (local development).
	AllowPrivate bool
	// TLSInsecure skips certificate verification (local development with self-signed
	// receivers).
	TLSInsecure bool
	// Resolver resolves endpoint host names; nil is the system's.
	Resolver *net.Resolver
	// RootCAs are the certificate authorities receivers' certificates must chain to; nil is
	// the system's.
	RootCAs *x509.CertPool
	// TracerProvider makes each attempt's client span; nil makes none.
	TracerProvider trace.TracerProvider
	// MeterProvider counts the attempts by result (metrics.go); nil counts nothing.
	MeterProvider metric.MeterProvider
	// InFlight is how many attempts the service can make at once (its delivery workers and
	// its fan-outs' first attempts): as many idle connections to one receiver are kept, so a
	// burst to one host does not close most of its connections when it ends and pay a TLS
	// handshake for each of them in the next (a quarter of a delivery's CPU in the sender and
	// the receiver together when twenty endpoints shared one host; docs/events.md).
	InFlight int
}

// idlePerHost is the least number of idle connections kept to one receiver.
const idlePerHost = 100

// Sender implements app.Sender.
type Sender struct {
	client  *http.Client
	now     func() time.Time
	tracer  trace.Tracer
	metrics *attemptMetrics
}

var _ app.Sender = (*Sender)(nil)

// New returns a sender.
func New(cfg Config) (*Sender, error) {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = noopmetric.NewMeterProvider()
	}
	metrics, err := newAttemptMetrics(mp)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: min(cfg.Timeout, 10*time.Second), KeepAlive: 30 * time.Second, Resolver: cfg.Resolver}
	if !cfg.AllowPrivate {
		// Every connection, to every address the name resolved to, is checked as it is made:
		// a URL accepted at creation cannot later lead inside by DNS (rebinding).
		dialer.Control = netguard.Control
	}
	transport := &http.Transport{
		Proxy:               nil, // a proxy would make the guard check the proxy, not the receiver
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: cfg.TLSInsecure, RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}, //nolint:gosec // opt-in for local development
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: min(cfg.Timeout, 10*time.Second),
		MaxIdleConns:        max(1000, cfg.InFlight),
		MaxIdleConnsPerHost: max(idlePerHost, cfg.InFlight),
		IdleConnTimeout:     90 * time.Second,
	}
	return &Sender{
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is an answer, and not a 2xx: the attempt failed. Following it could
			// also lead to an address the guard would have refused at creation.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now:     time.Now,
		tracer:  tp.Tracer("rentalplatform/webhooks-svc/webhookhttp"),
		metrics: metrics,
	}, nil
}

// Send implements app.Sender. Each attempt is a client span of the trace of the task that makes
// it (the fan-out of the event, or a delivery task).
//
// The span is made here rather than by otelhttp's transport because of what it may say: an
// endpoint URL can hold the receiver's credentials in its path or query (chat webhooks do), so
// the span names the receiver by scheme, host and port only, never url.full, since traces often
// end up with a hosted vendor. Nor is any trace context sent to the receiver: the trace ids are
// the platform's own.
func (s *Sender) Send(ctx context.Context, r app.Request) (res domain.Result) {
	// The request is built first so that the span names the receiver from the URL it parsed.
	req, reqErr := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	var receiver []attribute.KeyValue
	if reqErr == nil {
		receiver = receiverAttrs(req.URL)
	}
	ctx, span := s.tracer.Start(ctx, http.MethodPost+" webhook", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(receiver,
			attribute.String("http.request.method", http.MethodPost),
			attribute.String("webhook.message_id", r.MessageID))...))
	defer func() {
		s.metrics.record(res)
		if res.Status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", res.Status))
		}
		if code := res.Attempt().ErrorCode; code != "" {
			span.SetAttributes(attribute.String("error.type", string(code)))
			span.SetStatus(codes.Error, string(code))
		}
		span.End()
	}()
	start := s.now()
	res = domain.Result{At: r.Timestamp}
	if reqErr != nil {
		// Endpoint URLs are validated when stored; this is a bug, not the receiver's doing.
		res.ErrorCode, res.Cause = domain.AttemptConnectionFailed, fmt.Errorf("build request: %w", reqErr)
		return res
	}
	var prog progress
	req = req.WithContext(httptrace.WithClientTrace(ctx, prog.trace()))
	keys := make([][]byte, 0, len(r.Secrets))
	for _, sec := range r.Secrets {
		if k, err := stdwebhooks.DecodeSecret(sec); err == nil {
			keys = append(keys, k)
		}
	}
	req.Header.Set(stdwebhooks.HeaderID, r.MessageID)
	req.Header.Set(stdwebhooks.HeaderTimestamp, strconv.FormatInt(r.Timestamp.Unix(), 10))
	req.Header.Set(stdwebhooks.HeaderSignature, stdwebhooks.Sign(keys, r.MessageID, r.Timestamp.Unix(), r.Body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)

	resp, err := s.client.Do(req)
	if err != nil {
		res.Duration = s.now().Sub(start)
		res.ErrorCode, res.Cause = classify(err, prog.get()), err
		return res
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	_ = resp.Body.Close()
	res.Duration = s.now().Sub(start)
	res.Status = resp.StatusCode
	if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), s.now()); ok {
		res.RetryAfter = &d
	}
	return res
}

// receiverAttrs names the receiver of an attempt by scheme, host and port: the parts of its URL
// that are never a credential.
func receiverAttrs(u *url.URL) []attribute.KeyValue {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	attrs := []attribute.KeyValue{attribute.String("url.scheme", u.Scheme), attribute.String("server.address", u.Hostname())}
	if n, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, attribute.Int("server.port", n))
	}
	return attrs
}
