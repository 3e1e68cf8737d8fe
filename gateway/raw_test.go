package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"rentalplatform/libs/ids"
)

// rawExchange writes raw bytes to addr and reads every response until the server closes the
// connection, so an answer to a smuggled request, sent after one that should have been the
// last, is counted too. It fails the test if the server keeps the connection open for 10 s or
// sends bytes that are not a response.
func rawExchange(t testing.TB, addr, raw string) []*http.Response {
	t.Helper()
	conn := sendRaw(t, addr, raw)
	defer conn.Close()
	// Nothing more is coming: a server waiting for the rest of a request sees the end now.
	_ = conn.(*net.TCPConn).CloseWrite()
	out, err := readResponses(bufio.NewReader(conn))
	if err != nil {
		t.Fatalf("after %d responses %v: %v", len(out), statuses(out), err)
	}
	return out
}

// sendRaw opens a connection to addr, with a deadline of 10 s for everything on it, and writes
// raw bytes to it. The caller closes it.
func sendRaw(t testing.TB, addr, raw string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return conn
}

// readResponses reads responses until the connection ends: cleanly (io.EOF), or reset after an
// answer, which is how a close looks when the request's unread bytes were left behind.
func readResponses(br *bufio.Reader) ([]*http.Response, error) {
	var out []*http.Response
	for {
		if _, err := br.Peek(1); err == io.EOF || (errors.Is(err, syscall.ECONNRESET) && len(out) > 0) {
			return out, nil
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return out, err
		}
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
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

	// The request target's limit (4 KiB, checked by the gateway: 414) and the read buffer's
	// (8 KiB for the request line and headers together, fasthttp's: 414 when the request line
	// does not fit, 431 when the headers do not). Each refusal ends the connection, so the
	// request sent after it on the same connection is never answered.
	next := "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\nConnection: close\r\n\r\n"
	target := func(n int) string { // a path of n bytes
		return "/v1/events?q=" + strings.Repeat("a", n-len("/v1/events?q="))
	}
	for _, tc := range []struct {
		name, raw string
		status    int
		code      string
	}{
		{"target at the limit", "GET " + target(4096) + " HTTP/1.1\r\nHost: x\r\n\r\n" + next, 401, ""},
		{"target one byte over", "GET " + target(4097) + " HTTP/1.1\r\nHost: x\r\n\r\n" + next, 414, "request_uri_too_long"},
		{"target over the read buffer", "GET " + target(9<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n" + next, 414, "request_uri_too_long"},
		{"headers over the read buffer", "GET /v1/events HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 9<<10) + "\r\n\r\n" + next, 431, "request_headers_too_large"},
		{"many headers over the read buffer", "GET /v1/events HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: "+strings.Repeat("a", 100)+"\r\n", 90) + "\r\n" + next, 431, "request_headers_too_large"},
		{"target at the limit, headers over the rest of the buffer", "GET " + target(4096) + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 5<<10) + "\r\n\r\n" + next, 431, "request_headers_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resps := rawExchange(t, public, tc.raw)
			if len(resps) == 0 {
				t.Fatal("no answer")
			}
			if tc.status == 401 {
				// Routed as usual, and the connection kept: the next request is answered too.
				if fmt.Sprint(statuses(resps)) != "[401 200]" {
					t.Fatalf("statuses %v, want [401 200]", statuses(resps))
				}
				return
			}
			if len(resps) != 1 {
				t.Fatalf("got %d responses %v, want 1: the connection ends after the refusal", len(resps), statuses(resps))
			}
			checkRawError(t, resps[0], tc.status, tc.code)
			if !resps[0].Close {
				t.Fatal("the refusal does not say Connection: close")
			}
		})
	}

	t.Run("admin listener too", func(t *testing.T) {
		resps := rawExchange(t, s.proc.Addrs["admin"], "FOO /admin/api_keys HTTP/1.1\r\nHost: x\r\n\r\n")
		if len(resps) != 1 {
			t.Fatalf("got %d responses", len(resps))
		}
		checkRawError(t, resps[0], 405, "method_not_allowed")
		// Its read buffer is fasthttp's 4 KiB, so a target over the limit overflows it.
		resps = rawExchange(t, s.proc.Addrs["admin"], "GET /admin/api_keys?q="+strings.Repeat("a", 4096)+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if len(resps) != 1 {
			t.Fatalf("got %d responses", len(resps))
		}
		checkRawError(t, resps[0], 414, "request_uri_too_long")
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

// TestFraming sends, over a raw socket, framings that RFC 9112 asks a server to refuse, each
// followed by a smuggled authenticated request that must never be answered: exactly one
// answer, the envelope, and the connection closed.
func TestFraming(t *testing.T) {
	s := startStack(t, nil)
	key := *s.createKey(t, "acct_framing", false).Secret
	public := s.proc.Addrs["public"]
	auth := "Authorization: Bearer " + key + "\r\n"
	smuggled := "GET /v1/events?limit=1 HTTP/1.1\r\nHost: x\r\n" + auth + "Connection: close\r\n\r\n"
	body := `{"a":1}` + smuggled

	refused := []struct {
		name, raw string
		status    int
		code      string
	}{
		{"differing Content-Length (the probe's request)",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nContent-Length: " +
				itoa(len(body)) + "\r\nContent-Length: 7\r\n\r\n" + body, 400, "request_malformed"},
		{"differing Content-Length, short one first",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 7\r\nContent-Length: " +
				itoa(len(body)) + "\r\n\r\n" + body, 400, "request_malformed"},
		{"equal Content-Length twice",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 7\r\nContent-Length: 7\r\n\r\n" + body, 400, "request_malformed"},
		{"Content-Length with a space before the colon",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length : 7\r\n\r\n" + body, 400, "request_malformed"},
		{"Transfer-Encoding and Content-Length",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 400, "request_malformed"},
		{"Content-Length and Transfer-Encoding",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled, 400, "request_malformed"},
		{"Transfer-Encoding twice",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 400, "request_malformed"},
		{"a transfer coding other than chunked",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + smuggled, 400, "request_malformed"},
		{"Transfer-Encoding in HTTP/1.0",
			"POST /v1/webhook_endpoints HTTP/1.0\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\n" + smuggled, 400, "request_malformed"},
		{"a request line without a version (HTTP/0.9 style)",
			"POST /v1/webhook_endpoints\r\nHost: x\r\n" + auth + "Content-Length: 7\r\nConnection: keep-alive\r\n\r\n{\"a\":1}" + smuggled, 400, "request_malformed"},
		{"a request target that is not a path",
			"GET v1/events HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
		{"a space inside the request target",
			"GET /v1/events HTTP/1.1 HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
		{"an empty version",
			"GET /v1/events \r\nHost: x\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
		{"a fragment in the request target",
			"GET /v1/events#x HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
		{"a bare percent in the request target",
			"GET /v1/events?x=100% HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
		{"folded header line",
			"GET /v1/events HTTP/1.1\r\nHost: x\r\n" + auth + "X-A: 1\r\n Content-Length: 5\r\n\r\n" + smuggled, 400, "request_malformed"},
		{"control character in a value",
			"GET /v1/events HTTP/1.1\r\nHost: x\r\n" + auth + "X-A: a\rb\r\n\r\n" + smuggled, 400, "request_malformed"},
		{"HTTP/1.1 without Host",
			"GET /v1/events HTTP/1.1\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
		{"two Host headers",
			"GET /v1/events HTTP/1.1\r\nHost: x\r\nHost: y\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
		{"HTTP/2.0 request line over HTTP/1",
			"GET /v1/events HTTP/2.0\r\nHost: x\r\n" + auth + "\r\n" + smuggled, 505, "http_version_not_supported"},
		{"not an HTTP version",
			"GET /v1/events FOO/1.1\r\nHost: x\r\n" + auth + "\r\n" + smuggled, 400, "request_malformed"},
	}
	for _, listener := range []string{"public", "admin"} {
		for _, tc := range refused {
			t.Run(listener+"/"+tc.name, func(t *testing.T) {
				raw := tc.raw
				if listener == "admin" {
					raw = strings.Replace(raw, "/v1/webhook_endpoints", "/admin/api_keys", 1)
					raw = strings.Replace(raw, "/v1/events", "/admin/api_keys", 1)
				}
				resps := rawExchange(t, s.proc.Addrs[listener], raw)
				if len(resps) != 1 {
					t.Fatalf("got %d responses %v, want exactly 1: the rest of the connection is not requests", len(resps), statuses(resps))
				}
				checkRawError(t, resps[0], tc.status, tc.code)
				if !resps[0].Close {
					t.Fatal("the refusal does not say Connection: close")
				}
			})
		}
	}

	accepted := []struct {
		name, raw string
		statuses  []int
	}{
		{"two pipelined requests",
			"GET /v1/events HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n" + smuggled, []int{200, 200}},
		{"a chunked body",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n" + smuggled, []int{200, 200}},
		{"HTTP/1.0 without Host is answered once, keep-alive or not",
			"GET /v1/events HTTP/1.0\r\n" + auth + "Connection: keep-alive\r\n\r\n" + smuggled, []int{200}},
		{"a body cut short (Content-Length) is not forwarded as complete",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"a\":1}", []int{400}},
		{"a chunked body cut short before its last chunk is not forwarded as complete",
			"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":1}\r\n", []int{400}},
		{"an absolute-form request target",
			"GET http://x/v1/events HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n" + smuggled, []int{200, 200}},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			resps := rawExchange(t, public, tc.raw)
			if got := statuses(resps); fmt.Sprint(got) != fmt.Sprint(tc.statuses) {
				t.Fatalf("statuses %v, want %v", got, tc.statuses)
			}
		})
	}
}

// FuzzListener feeds arbitrary bytes to the public listener and holds it to one answer per
// request: it may answer at most as many requests as a strict HTTP/1.1 parser (net/http's)
// finds in the bytes, plus one refusal for the first thing that parser rejects, and never
// anything after that refusal. Answering more is how a smuggled request shows. Every answer
// carries a request id, and the server neither panics nor holds the connection.
func FuzzListener(f *testing.F) {
	s := startStack(f, nil)
	key := *s.createKey(f, "acct_fuzz", false).Secret
	public := s.proc.Addrs["public"]
	get := "GET /v1/events?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_KEY\r\n\r\n"
	for _, seed := range []string{
		get,
		get + get,
		"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_KEY\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}" + get,
		"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_KEY\r\nContent-Length: 90\r\nContent-Length: 7\r\n\r\n{\"a\":1}" + get,
		"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_KEY\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n" + get,
		"POST /v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_KEY\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n" + get,
		"POST /v1/collection_cases/dc_1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_KEY\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 4\r\n\r\n--b\n" + get,
		"GET /v1/events HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get,
		"GET /v1/events HTTP/2.0\r\nHost: x\r\n\r\n" + get,
		"GET /\r\n\r\n" + get,
		"HEAD /v1/events HTTP/1.1\r\nHost: x\r\n\r\n" + get,
		"POST /v1/events HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}" + get,
		"GARBAGE\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		in = bytes.ReplaceAll(in, []byte("sk_test_KEY"), []byte(key))
		reqs := strictRequests(in)

		conn, err := net.Dial("tcp", public)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		// A write error means the server closed early, which the read below accounts for.
		_, _ = conn.Write(in)
		_ = conn.(*net.TCPConn).CloseWrite()

		var resps []*http.Response
		br := bufio.NewReader(conn)
		for {
			if _, err := br.Peek(1); err == io.EOF || (errors.Is(err, syscall.ECONNRESET) && len(resps) > 0) {
				break
			}
			var req *http.Request
			if len(resps) < len(reqs) {
				req = reqs[len(resps)] // a HEAD answer has no body to read
			}
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatalf("after %d answers %v to %d requests: %v", len(resps), statuses(resps), len(reqs), err)
			}
			if resp.Close && resp.StatusCode >= 400 {
				// A refusal ends the connection, so the rest of the stream is its body. It is
				// read as such rather than by Content-Length: whether a refused HEAD's answer has
				// a body depends on whether the engine got as far as the method, which a strict
				// parser's view of the same bytes cannot tell.
				rest, _ := io.ReadAll(br)
				if statusLine.Match(rest) {
					t.Fatalf("an answer follows the connection-ending %d: %q", resp.StatusCode, rest)
				}
			} else {
				_, err = io.Copy(io.Discard, resp.Body)
				if err != nil {
					t.Fatalf("reading answer %d: %v", len(resps)+1, err)
				}
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusContinue {
				continue // an interim answer to Expect: 100-continue, not the answer
			}
			if !ids.Valid(ids.Request, resp.Header.Get("Request-Id")) {
				t.Fatalf("answer %d (%d) has no request id", len(resps)+1, resp.StatusCode)
			}
			resps = append(resps, resp)
		}
		switch {
		case len(resps) > len(reqs)+1:
			t.Fatalf("%d answers %v to %d requests a strict parser finds: a request was smuggled", len(resps), statuses(resps), len(reqs))
		case len(resps) == len(reqs)+1 && resps[len(resps)-1].StatusCode < 400:
			t.Fatalf("answers %v to %d requests: the extra answer is not a refusal", statuses(resps), len(reqs))
		}
	})
}

// statusLine finds a response's status line inside bytes read as a body.
var statusLine = regexp.MustCompile(`HTTP/1\.[01] [1-5][0-9][0-9] `)

// strictRequests returns the requests net/http's parser reads from b, up to the first it
// refuses (or whose body is cut short).
func strictRequests(b []byte) []*http.Request {
	var out []*http.Request
	br := bufio.NewReader(bytes.NewReader(b))
	for {
		// RFC 9112 §2.2: a server should ignore empty lines before a request line (fasthttp
		// does); net/http does not, so they are skipped here.
		for {
			if p, _ := br.Peek(2); len(p) == 2 && p[0] == '\r' && p[1] == '\n' {
				_, _ = br.Discard(2)
			} else if len(p) > 0 && p[0] == '\n' {
				_, _ = br.Discard(1)
			} else {
				break
			}
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return out
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return out
		}
		out = append(out, req)
		if req.Close {
			return out
		}
	}
}

// TestHeadAnswersAsGet sends HEAD then GET on one connection: the HEAD gets the GET's status
// and headers without a body (a body would be read as the start of the next answer), on a
// buffered route, a streamed download, a missing route and without a key.
func TestHeadAnswersAsGet(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	key := *s.createKey(t, "acct_head", false).Secret
	public := s.proc.Addrs["public"]
	for _, tc := range []struct {
		path, key string
		status    int
	}{
		{"/v1/events", key, 200},
		{"/v1/collection_cases/dc_1/files/file_1/content", key, 200},
		{"/v1/nope", key, 404},
		{"/v1/events", "", 401},
	} {
		t.Run(fmt.Sprintf("%s %d", tc.path, tc.status), func(t *testing.T) {
			auth := ""
			if tc.key != "" {
				auth = "Authorization: Bearer " + tc.key + "\r\n"
			}
			raw := "HEAD " + tc.path + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n" +
				"GET " + tc.path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Connection: close\r\n\r\n"
			conn := sendRaw(t, public, raw)
			defer conn.Close()
			br := bufio.NewReader(conn)
			head, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
			if err != nil {
				t.Fatalf("HEAD: %v", err)
			}
			head.Body.Close()
			get, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("GET after HEAD (a body sent with the HEAD's answer shows here): %v", err)
			}
			body, err := io.ReadAll(get.Body)
			get.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if head.StatusCode != tc.status || get.StatusCode != tc.status {
				t.Fatalf("HEAD %d, GET %d, want %d", head.StatusCode, get.StatusCode, tc.status)
			}
			// An error's message may name the method, so only a success's length is the GET's.
			sameLength := tc.status != 200 || head.ContentLength == int64(len(body))
			if !sameLength || head.ContentLength <= 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
				t.Fatalf("HEAD says %d bytes of %q, GET sent %d of %q", head.ContentLength, head.Header.Get("Content-Type"),
					len(body), get.Header.Get("Content-Type"))
			}
			if !ids.Valid(ids.Request, head.Header.Get("Request-Id")) {
				t.Fatalf("HEAD without a Request-Id: %v", head.Header)
			}
		})
	}
}
