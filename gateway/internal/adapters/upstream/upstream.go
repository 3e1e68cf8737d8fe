// Package upstream sends requests from the gateway to the services behind it over pooled
// keep-alive fasthttp connections, and says in the gateway's terms why a call failed.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Why a call failed. Errors from Do wrap exactly one of these.
var (
	// ErrUnavailable: the service could not be reached, or dropped the connection before
	// answering.
	ErrUnavailable = errors.New("upstream unavailable")
	// ErrTimeout: the service did not answer within the timeout.
	ErrTimeout = errors.New("upstream timed out")
	// ErrOverloaded: every connection to the service stayed busy for MaxConnWait; the
	// gateway sheds the request instead of queueing it further.
	ErrOverloaded = errors.New("upstream connection pool exhausted")
	// ErrBadResponse: the service answered with something that is not a usable HTTP
	// response (malformed, or larger than MaxResponseBody).
	ErrBadResponse = errors.New("upstream answered with an unusable response")
)

// Pool sizing and limits shared by every upstream.
const (
	// MaxConns is the connection pool size per service for ordinary requests. A service
	// answering in ~1 ms needs only a few dozen to carry thousands of requests per second;
	// the headroom absorbs slow bursts.
	MaxConns = 512
	// MaxUploadConns bounds concurrent streamed uploads per service.
	MaxUploadConns = 64
	// MaxConnWait is how long a request waits for a free connection before ErrOverloaded.
	MaxConnWait = time.Second
	// MaxIdleConn closes pooled connections idle this long, well before the services' own
	// idle timeout, so the gateway never writes into a connection the service is closing.
	MaxIdleConn = 30 * time.Second
	// MaxResponseBody bounds a buffered response.
	MaxResponseBody = 64 << 20
	// UploadWriteTimeout bounds sending one streamed body to the service. The client's side of
	// the transfer is bounded by the public listener's read timeout (60 s).
	UploadWriteTimeout = 2 * time.Minute
	// MaxStreamDuration bounds one streamed response (Stream) from the request to its last
	// byte. The client's side is bounded by the public listener's write timeout (60 s).
	MaxStreamDuration = 2 * time.Minute
)

// Config describes one service.
type Config struct {
	Name    string        // for errors, logs and spans
	URL     string        // http(s)://host[:port]
	Timeout time.Duration // how long to wait for the answer
}

// Upstream is one service.
type Upstream struct {
	name    string
	base    string // scheme://host:port, no trailing slash
	timeout time.Duration
	client  *fasthttp.HostClient
	upload  *fasthttp.HostClient
	// stream carries the responses that are passed on as they arrive (Stream). It is
	// net/http's, whose ResponseHeaderTimeout bounds the wait for the answer and leaves the
	// body to flow at the client's pace; fasthttp's deadlines would cover the whole body.
	stream *http.Client
}

// New returns the upstream for cfg.
func New(cfg Config) (*Upstream, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("upstream %s: %q is not a base URL like http://127.0.0.1:8091", cfg.Name, cfg.URL)
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("upstream %s: timeout must be positive", cfg.Name)
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	client := func(maxConns int) *fasthttp.HostClient {
		return &fasthttp.HostClient{
			Addr:                addr,
			Name:                "rental-gateway",
			IsTLS:               u.Scheme == "https",
			MaxConns:            maxConns,
			MaxConnWaitTimeout:  MaxConnWait,
			MaxIdleConnDuration: MaxIdleConn,
			MaxResponseBodySize: MaxResponseBody,
			// The gateway checked and signed this exact path; the service must see it as is.
			DisablePathNormalizing: true,
			RetryIfErr:             retryIfErr,
		}
	}
	up := &Upstream{
		name:    cfg.Name,
		base:    u.Scheme + "://" + u.Host,
		timeout: cfg.Timeout,
		client:  client(MaxConns),
		upload:  client(MaxUploadConns),
	}
	// A streamed upload may take longer to send than the answer may take to come: its
	// timeout starts once the body is sent (ReadTimeout), not when the request starts.
	up.upload.ReadTimeout = cfg.Timeout
	up.upload.WriteTimeout = UploadWriteTimeout
	up.stream = &http.Client{
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: MaxConnWait}).DialContext,
			MaxConnsPerHost:       MaxUploadConns,
			MaxIdleConnsPerHost:   MaxUploadConns,
			IdleConnTimeout:       MaxIdleConn,
			ResponseHeaderTimeout: cfg.Timeout,
			DisableCompression:    true, // the body passes as the service sent it
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return up, nil
}

// Streamed is a service's answer whose body is read as it arrives. Body must be closed.
type Streamed struct {
	Status        int
	Header        http.Header
	Body          io.ReadCloser
	ContentLength int64 // -1 when unknown
}

// Stream sends req, which has no body, and returns the answer once its header has arrived,
// within the timeout; the body follows as the caller reads it, within MaxStreamDuration of
// the start. Errors are classified as Do's are.
func (u *Upstream) Stream(req *fasthttp.Request) (*Streamed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), MaxStreamDuration)
	hr, err := http.NewRequestWithContext(ctx, string(req.Header.Method()), string(req.URI().FullURI()), nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w: %w", u.name, ErrBadResponse, err)
	}
	for k, v := range req.Header.All() {
		hr.Header.Add(string(k), string(v))
	}
	if hr.Header.Get("User-Agent") == "" {
		hr.Header.Set("User-Agent", "rental-gateway")
	}
	resp, err := u.stream.Do(hr)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w: %w", u.name, classify(err), err)
	}
	return &Streamed{Status: resp.StatusCode, Header: resp.Header, ContentLength: resp.ContentLength,
		Body: &streamBody{ReadCloser: resp.Body, cancel: cancel}}, nil
}

// streamBody ends the request's context with the body.
type streamBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *streamBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Name returns the service's name.
func (u *Upstream) Name() string { return u.name }

// SetURI points req at path?query on this service. path must already be clean.
func (u *Upstream) SetURI(req *fasthttp.Request, path string, query []byte) {
	var buf [512]byte // on the stack unless the URI is longer
	b := append(buf[:0], u.base...)
	b = append(b, path...)
	if len(query) > 0 {
		b = append(b, '?')
		b = append(b, query...)
	}
	req.SetRequestURIBytes(b)
}

// Do sends req and reads the answer into resp within the timeout. A request with a body
// stream (an upload) is sent without a deadline on the whole exchange; the timeout then
// applies to waiting for the answer once the body is sent.
func (u *Upstream) Do(req *fasthttp.Request, resp *fasthttp.Response) error {
	var err error
	if req.IsBodyStream() {
		err = u.upload.Do(req, resp)
	} else {
		err = u.client.DoTimeout(req, resp, u.timeout)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %w", u.name, classify(err), err)
	}
	return nil
}

func classify(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return ErrOverloaded
	case errors.Is(err, fasthttp.ErrTimeout), errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return ErrBadResponse
	case errors.Is(err, fasthttp.ErrDialTimeout), errors.Is(err, fasthttp.ErrConnectionClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrUnavailable
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return ErrUnavailable
	}
	return ErrBadResponse
}

// Check asks the service's /healthz, within ctx's deadline (2 s when it has none).
func (u *Upstream) Check(ctx context.Context) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(2 * time.Second)
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	u.SetURI(req, "/healthz", nil)
	req.Header.SetMethod(fasthttp.MethodGet)
	if err := u.client.DoDeadline(req, resp, deadline); err != nil {
		return fmt.Errorf("%s: %w: %w", u.name, classify(err), err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("%s: /healthz answered %d", u.name, resp.StatusCode())
	}
	return nil
}

// retryIfErr keeps the retry rule fasthttp had before v1.5x dropped its second half: a
// request is sent again on a fresh connection when it is idempotent, or when the service
// closed the connection before a single byte of answer (io.EOF). The second case is a pooled
// keep-alive connection the service had already closed (idle timeout, restart), which a
// request of any method meets first; the request never reached a handler, so it is retried
// rather than answered 502. A streamed body is never retried (fasthttp checks that first).
func retryIfErr(req *fasthttp.Request, _ int, err error) (resetTimeout, retry bool) {
	h := &req.Header
	return false, h.IsGet() || h.IsHead() || h.IsPut() || errors.Is(err, io.EOF)
}
