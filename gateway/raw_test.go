package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/ids"
)

// rawExchange writes raw bytes to addr and reads every response until the server closes.
func rawExchange(t *testing.T, addr, raw string) []*http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	var out []*http.Response
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
		if resp.Close {
			return out
		}
	}
}

func checkRawError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d", resp.StatusCode, status)
	}
	var e errorBody
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("not an envelope: %v", err)
	}
	rid := resp.Header.Get("Request-Id")
	if e.Error.Code != code || !ids.Valid(ids.Request, rid) || e.Error.RequestID != rid {
		t.Fatalf("envelope %+v with Request-Id %q, want code %s and matching req_ ids", e.Error, rid, code)
	}
}

func TestProtocolErrors(t *testing.T) {
	s := startStack(t, nil)
	key := *s.createKey(t, "acct_raw", false).Secret
	public := s.proc.Addrs["public"]

	t.Run("unknown method with a smuggled request in its body", func(t *testing.T) {
		inner := "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\n\r\n"
		raw := "FOO /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key +
			"\r\nContent-Length: " + itoa(len(inner)) + "\r\n\r\n" + inner
		resps := rawExchange(t, public, raw)
		if len(resps) != 1 {
			t.Fatalf("got %d responses, want exactly 1 (the body must not be served as a request)", len(resps))
		}
		checkRawError(t, resps[0], 405, "method_not_allowed")
	})

	t.Run("unauthenticated body is not parsed as the next request", func(t *testing.T) {
		inner := "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\n\r\n"
		raw := "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(inner)) + "\r\n\r\n" + inner +
			"GET /v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
		resps := rawExchange(t, public, raw)
		if len(resps) != 2 || resps[0].StatusCode != 401 || resps[1].StatusCode != 401 {
			t.Fatalf("got %d responses (%v), want two 401s: the body is drained, the next request is served", len(resps), statuses(resps))
		}
	})

	t.Run("malformed request", func(t *testing.T) {
		resps := rawExchange(t, public, "GARBAGE\r\n\r\n")
		if len(resps) != 1 {
			t.Fatalf("got %d responses", len(resps))
		}
		checkRawError(t, resps[0], 400, "request_malformed")
	})

	t.Run("headers too large", func(t *testing.T) {
		raw := "GET /v1/events HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"
		resps := rawExchange(t, public, raw)
		if len(resps) != 1 {
			t.Fatalf("got %d responses", len(resps))
		}
		checkRawError(t, resps[0], 431, "request_headers_too_large")
	})

	t.Run("admin listener too", func(t *testing.T) {
		resps := rawExchange(t, s.proc.Addrs["admin"], "FOO /admin/api_keys HTTP/1.1\r\nHost: x\r\n\r\n")
		if len(resps) != 1 {
			t.Fatalf("got %d responses", len(resps))
		}
		checkRawError(t, resps[0], 405, "method_not_allowed")
	})
}

func statuses(rs []*http.Response) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.StatusCode)
	}
	return out
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
