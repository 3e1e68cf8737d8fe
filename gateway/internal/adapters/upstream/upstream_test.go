package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8091", "ftp://x", "http://", "http://x/path", "http://x?q=1", "http://u:p@x"} {
		if _, err := New(Config{Name: "x", URL: u, Timeout: time.Second}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if _, err := New(Config{Name: "x", URL: "http://x", Timeout: 0}); err == nil {
		t.Error("New accepted a zero timeout")
	}
	for _, u := range []string{"http://127.0.0.1:8091", "http://svc/", "https://svc.internal"} {
		if _, err := New(Config{Name: "x", URL: u, Timeout: time.Second}); err != nil {
			t.Errorf("New(%q) = %v", u, err)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{fasthttp.ErrNoFreeConns, ErrOverloaded},
		{fasthttp.ErrTimeout, ErrTimeout},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, ErrTimeout},
		{fasthttp.ErrDialTimeout, ErrUnavailable},
		{fasthttp.ErrConnectionClosed, ErrUnavailable},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ErrUnavailable},
		{fmt.Errorf("wrapped: %w", syscall.ECONNRESET), ErrUnavailable},
		{io.ErrUnexpectedEOF, ErrUnavailable},
		{fasthttp.ErrBodyTooLarge, ErrBadResponse},
		{errors.New("cannot parse response status line"), ErrBadResponse},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func TestDoAndCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		default:
			_, _ = io.WriteString(w, r.URL.RequestURI())
		}
	}))
	defer srv.Close()
	u, err := New(Config{Name: "svc", URL: srv.URL, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	call := func(path string) (*fasthttp.Response, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		u.SetURI(req, path, []byte("a=1&b=%20"))
		err := u.Do(req, resp)
		return resp, err
	}
	resp, err := call("/v1/x")
	if err != nil || string(resp.Body()) != "/v1/x?a=1&b=%20" {
		t.Fatalf("Do = %q, %v", resp.Body(), err)
	}
	start := time.Now()
	if _, err := call("/slow"); !errors.Is(err, ErrTimeout) {
		t.Fatalf("slow Do = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if err := u.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v", err)
	}

	// Nothing listens on port 1 (outside the ephemeral range, so no other test's server can
	// be handed it).
	down, _ := New(Config{Name: "down", URL: "http://127.0.0.1:1", Timeout: time.Second})
	if err := down.Check(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Check(down) = %v, want ErrUnavailable", err)
	}
}
