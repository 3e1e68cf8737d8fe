// Package webhookhttp makes delivery attempts: one signed HTTPS POST each, through a client
// that follows no redirects, bounds every attempt by the configured timeout and, unless told
// otherwise, refuses to connect to internal addresses whatever a name resolves to.
package webhookhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
	"rentalplatform/webhooks-svc/internal/netguard"
	"rentalplatform/webhooks-svc/internal/stdwebhooks"
)

// UserAgent names the platform to receivers.
const UserAgent = "RentalPlatform-Webhooks/1.0"

// drainLimit is how much of a response body is read (and dropped) so the connection can be
// reused; a longer body costs the connection instead.
const drainLimit = 64 << 10

// maxErrorLen bounds the error recorded for an attempt that got no response.
const maxErrorLen = 300

// Config configures the sender.
type Config struct {
	// Timeout bounds one attempt, from connecting to the end of the response headers.
	Timeout time.Duration
	// AllowPrivate lets attempts reach internal addresses (local development).
	AllowPrivate bool
	// TLSInsecure skips certificate verification (local development with self-signed
	// receivers).
	TLSInsecure bool
}

// Sender implements app.Sender.
type Sender struct {
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
}

var _ app.Sender = (*Sender)(nil)

// New returns a sender.
func New(cfg Config) *Sender {
	dialer := &net.Dialer{Timeout: min(cfg.Timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		// Every connection, to every address the name resolved to, is checked as it is made:
		// a URL accepted at creation cannot later lead inside by DNS (rebinding).
		dialer.Control = netguard.Control
	}
	transport := &http.Transport{
		Proxy:               nil, // a proxy would make the guard check the proxy, not the receiver
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: cfg.TLSInsecure, MinVersion: tls.VersionTLS12}, //nolint:gosec // opt-in for local development
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
		timeout: cfg.Timeout,
		now:     time.Now,
	}
}

// Send implements app.Sender.
func (s *Sender) Send(ctx context.Context, r app.Request) domain.Result {
	start := s.now()
	res := domain.Result{At: r.Timestamp}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		res.Error = "invalid request: " + err.Error()
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
		res.Error = s.describe(err)
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

// describe turns a transport error into the short reason recorded with the attempt.
func (s *Sender) describe(err error) string {
	var ne net.Error
	var msg string
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		var ue *url.Error
		msg = err.Error()
		if errors.As(err, &ue) {
			msg = ue.Err.Error()
		}
		msg = "refused to connect: " + msg
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		msg = fmt.Sprintf("timed out after %s", s.timeout)
	default:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		msg = err.Error()
	}
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen]
	}
	return msg
}
