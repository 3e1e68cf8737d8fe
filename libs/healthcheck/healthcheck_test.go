package healthcheck

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// server answers /healthz with 200 and /readyz with 503, as a process whose store is down.
func server(t *testing.T) (addr, port string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"unavailable","checks":{"mongodb":"down"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	addr = srv.Listener.Addr().String()
	_, port, _ = net.SplitHostPort(addr)
	return addr, port
}

func TestMode(t *testing.T) {
	addr, port := server(t)
	// A port nothing listens on: taken and released again.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name     string
		args     []string
		env      string // the value of HTTP_ADDR; "" leaves it unset
		def      string
		wantOK   bool
		wantCode int
		wantErr  string // in what is written to stderr
	}{
		{name: "no arguments: the program starts", args: nil, wantOK: false},
		{name: "another argument: the program starts", args: []string{"-v"}, wantOK: false},
		{name: "a flag that only begins the same: the program starts", args: []string{"-healthchecks"}, wantOK: false},
		{name: "healthz answers 200", args: []string{"-healthcheck"}, env: addr, wantOK: true, wantCode: 0},
		{name: "two dashes", args: []string{"--healthcheck"}, env: addr, wantOK: true, wantCode: 0},
		{name: "the default address when the variable is unset", args: []string{"-healthcheck"}, def: addr, wantOK: true, wantCode: 0},
		{name: "an unspecified host is asked on loopback", args: []string{"-healthcheck"}, env: ":" + port, wantOK: true, wantCode: 0},
		{name: "0.0.0.0 is asked on loopback", args: []string{"-healthcheck"}, env: "0.0.0.0:" + port, wantOK: true, wantCode: 0},
		{name: "readyz answering 503 fails", args: []string{"-healthcheck=/readyz"}, env: addr, wantOK: true, wantCode: 1, wantErr: "answered 503"},
		{name: "an unknown path fails", args: []string{"-healthcheck=/nope"}, env: addr, wantOK: true, wantCode: 1, wantErr: "answered 404"},
		{name: "a path without a slash fails", args: []string{"-healthcheck=healthz"}, env: addr, wantOK: true, wantCode: 1, wantErr: "must start with /"},
		{name: "nothing listening fails", args: []string{"-healthcheck"}, env: closed, wantOK: true, wantCode: 1, wantErr: "connection refused"},
		{name: "port 0 cannot be checked", args: []string{"-healthcheck"}, env: "127.0.0.1:0", wantOK: true, wantCode: 1, wantErr: "no fixed port"},
		{name: "a malformed address fails", args: []string{"-healthcheck"}, env: "localhost", wantOK: true, wantCode: 1, wantErr: "listen address"},
		{name: "extra arguments fail", args: []string{"-healthcheck", "x"}, env: addr, wantOK: true, wantCode: 1, wantErr: "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(name string) string {
				if name == "HTTP_ADDR" {
					return tc.env
				}
				return ""
			}
			var stderr bytes.Buffer
			code, ok := Main(tc.args, getenv, "HTTP_ADDR", tc.def, &stderr)
			if ok != tc.wantOK || code != tc.wantCode {
				t.Fatalf("Main(%q) = %d, %v; want %d, %v (stderr: %s)", tc.args, code, ok, tc.wantCode, tc.wantOK, stderr.String())
			}
			if tc.wantErr == "" && stderr.Len() > 0 {
				t.Errorf("unexpected stderr: %s", stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.wantErr)
			}
		})
	}
}
