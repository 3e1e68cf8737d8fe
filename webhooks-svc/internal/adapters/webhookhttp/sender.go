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
	"strconv"
	"time"

	"rentalplatform/libs/netguard"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
	"rentalplatform/webhooks-svc/internal/stdwebhooks"
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
}

// Sender implements app.Sender.
type Sender struct {
	client *http.Client
	now    func() time.Time
}

var _ app.Sender = (*Sender)(nil)

// New returns a sender.
func New(cfg Config) *Sender {
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
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 100,
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
		now: time.Now,
	}
}

// Send implements app.Sender.
func (s *Sender) Send(ctx context.Context, r app.Request) domain.Result {
	start := s.now()
	res := domain.Result{At: r.Timestamp}
	var prog progress
	ctx = httptrace.WithClientTrace(ctx, prog.trace())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		// Endpoint URLs are validated when stored; this is a bug, not the receiver's doing.
		res.ErrorCode, res.Cause = domain.AttemptConnectionFailed, fmt.Errorf("build request: %w", err)
		return res
	}
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
