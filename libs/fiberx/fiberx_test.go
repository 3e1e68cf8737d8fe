package fiberx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/identity"
)

type payload struct {
	Name string `json:"name"`
}

func newApp(t *testing.T) (*fiber.App, *identity.Signer, *bytes.Buffer) {
	t.Helper()
	signer, err := identity.NewSigner([]byte(strings.Repeat("k", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	app := New(Config{Service: "test", Logger: log, Signer: signer, BodyLimit: 64})
	Health(app, log, Check{Name: "ok", Fn: func(context.Context) error { return nil }})
	app.Post("/v1/things", func(c *fiber.Ctx) error {
		var p payload
		if err := DecodeJSON(c, &p); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"name": p.Name, "account": Identity(c).Account})
	})
	app.Get("/v1/list", func(c *fiber.Ctx) error {
		q, err := Query(c)
		if err != nil {
			return err
		}
		return c.JSON(q)
	})
	app.Get("/v1/boom", func(c *fiber.Ctx) error { return errors.New("database exploded") })
	app.Get("/v1/panic", func(c *fiber.Ctx) error { panic("oh no") })
	return app, signer, logs
}

type envelope struct {
	Error apierr.Body `json:"error"`
}

func do(t *testing.T, app *fiber.App, req *http.Request) (*http.Response, envelope, []byte) {
	t.Helper()
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	var env envelope
	_ = json.Unmarshal(body, &env)
	return resp, env, body
}

func signed(s *identity.Signer, method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	s.Sign(req.Header.Set, identity.Identity{Account: "acct_a", RequestID: "req_123"}, method, strings.SplitN(path, "?", 2)[0])
	return req
}

func TestEnvelopes(t *testing.T) {
	app, signer, logs := newApp(t)
	for _, tc := range []struct {
		name      string
		req       *http.Request
		status    int
		code      string
		param     string
		requestID string
	}{
		{"unsigned", httptest.NewRequest("GET", "/v1/things", nil), 401, apierr.CodeIdentityInvalid, "", ""},
		{"no route", signed(signer, "GET", "/v1/nothing", ""), 404, apierr.CodeRouteMissing, "", "req_123"},
		{"wrong method", signed(signer, "DELETE", "/v1/things", ""), 405, apierr.CodeMethodNotAllowed, "", "req_123"},
		{"bad json", signed(signer, "POST", "/v1/things", `{"name":`), 400, apierr.CodeBodyInvalidJSON, "", "req_123"},
		{"unknown param", signed(signer, "POST", "/v1/things", `{"nom":"x"}`), 400, apierr.CodeParameterUnknown, "nom", "req_123"},
		{"duplicate param", signed(signer, "POST", "/v1/things", `{"name":"a","name":"b"}`), 400, apierr.CodeParameterDuplicate, "name", "req_123"},
		{"invalid UTF-8 param", signed(signer, "POST", "/v1/things", "{\"name\":\"\xff\"}"), 400, apierr.CodeParameterInvalid, "name", "req_123"},
		{"repeated query param", signed(signer, "GET", "/v1/list?limit=1&limit=2", ""), 400, apierr.CodeParameterDuplicate, "limit", "req_123"},
		{"invalid UTF-8 query value", signed(signer, "GET", "/v1/list?q=%FF", ""), 400, apierr.CodeParameterInvalid, "q", "req_123"},
		{"internal", signed(signer, "GET", "/v1/boom", ""), 500, apierr.CodeInternal, "", "req_123"},
		{"panic", signed(signer, "GET", "/v1/panic", ""), 500, apierr.CodeInternal, "", "req_123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, env, body := do(t, app, tc.req)
			if resp.StatusCode != tc.status || env.Error.Code != tc.code || env.Error.Param != tc.param {
				t.Fatalf("got %d %s", resp.StatusCode, body)
			}
			if env.Error.RequestID != tc.requestID {
				t.Fatalf("request_id %q, want %q", env.Error.RequestID, tc.requestID)
			}
			if tc.requestID != "" && resp.Header.Get(HeaderRequestID) != tc.requestID {
				t.Fatalf("Request-Id header %q", resp.Header.Get(HeaderRequestID))
			}
		})
	}
	if strings.Contains(logs.String(), `"database exploded"`) == false {
		t.Error("internal error cause was not logged")
	}
}

func TestWrongContentType(t *testing.T) {
	app, signer, _ := newApp(t)
	req := signed(signer, "POST", "/v1/things", `{"name":"x"}`)
	req.Header.Set("Content-Type", "text/plain")
	resp, env, _ := do(t, app, req)
	if resp.StatusCode != 415 || env.Error.Code != apierr.CodeUnsupportedMedia {
		t.Fatalf("got %d %+v", resp.StatusCode, env)
	}
	req = signed(signer, "POST", "/v1/things", `{"name":"x"}`)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, _, body := do(t, app, req)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"account":"acct_a"`) {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
}

func TestHealthNeedsNoIdentity(t *testing.T) {
	app, _, _ := newApp(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, _, body := do(t, app, httptest.NewRequest("GET", p, nil))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
}

// The body limit is enforced by the HTTP server before any middleware runs, so it is tested
// over a real connection.
func TestBodyTooLargeOverTheWire(t *testing.T) {
	app, signer, _ := newApp(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer app.Shutdown()
	req := signed(signer, "POST", "/v1/things", `{"name":"`+strings.Repeat("x", 100)+`"}`)
	req.URL.Scheme, req.URL.Host, req.RequestURI = "http", ln.Addr().String(), ""
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != 413 || env.Error.Code != apierr.CodeBodyTooLarge {
		t.Fatalf("got %d %+v %v", resp.StatusCode, env, err)
	}
}

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		want      url.Values
		wantCode  string
		wantParam string
	}{
		{"", url.Values{}, "", ""},
		{"limit=3&starting_after=we_1", url.Values{"limit": {"3"}, "starting_after": {"we_1"}}, "", ""},
		{"types[]=a&types[]=b", url.Values{"types[]": {"a", "b"}}, "", ""},
		{"types%5B%5D=a&types[]=b", url.Values{"types[]": {"a", "b"}}, "", ""},
		{"q=%C3%A6%F0%9F%8D%BA", url.Values{"q": {"æ🍺"}}, "", ""},
		{"q=%EF%BF%BD", url.Values{"q": {"\uFFFD"}}, "", ""}, // U+FFFD itself is valid text
		{"limit=", url.Values{"limit": {""}}, "", ""},        // empty values are the reader's to judge (listing refuses them)

		// A scalar parameter given twice, whatever its values and however it is encoded.
		{"limit=1&limit=2", nil, apierr.CodeParameterDuplicate, "limit"},
		{"limit=&limit=2", nil, apierr.CodeParameterDuplicate, "limit"},
		{"limit=5&limit=5", nil, apierr.CodeParameterDuplicate, "limit"},
		{"limit=5&%6cimit=5", nil, apierr.CodeParameterDuplicate, "limit"},
		{"created[gte]=1&created%5Bgte%5D=2", nil, apierr.CodeParameterDuplicate, "created[gte]"},
		{"types[0]=a&types[0]=b", nil, apierr.CodeParameterDuplicate, "types[0]"},
		{"b=1&b=2&a=1&a=2", nil, apierr.CodeParameterDuplicate, "a"},

		// Text that is not UTF-8 once decoded.
		{"url=https%3A%2F%2Fa%FF", nil, apierr.CodeParameterInvalid, "url"},
		{"q=%C3", nil, apierr.CodeParameterInvalid, "q"},
		{"q=%ED%A0%80", nil, apierr.CodeParameterInvalid, "q"}, // an encoded surrogate
		{"types[]=a&types[]=%FF", nil, apierr.CodeParameterInvalid, "types[]"},
		{"k%FFey=1", nil, apierr.CodeParameterInvalid, "k\uFFFDey"},
		{"q=\xff", nil, apierr.CodeParameterInvalid, "q"}, // raw bytes, not percent-encoded

		{"%zz", nil, apierr.CodeParameterInvalid, ""},
		{"a=1;b=2", nil, apierr.CodeParameterInvalid, ""},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseQuery(tc.raw)
			if tc.wantCode == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("ParseQuery(%q) = %v, %v; want %v", tc.raw, got, err, tc.want)
				}
				return
			}
			e := apierr.From(err)
			if e == nil || e.Status != 400 || e.Code != tc.wantCode || e.Param != tc.wantParam {
				t.Fatalf("ParseQuery(%q) error = %v; want %s on %q", tc.raw, err, tc.wantCode, tc.wantParam)
			}
		})
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"limit=1&limit=2", "types[]=a&types[]=b", "q=%FF", "%zz", "a=1&b=%C3%A6"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw)
		if err != nil {
			if e := apierr.From(err); e == nil || e.Status != 400 {
				t.Fatalf("non-400 error %v", err)
			}
			return
		}
		for name, vs := range q {
			if !utf8.ValidString(name) || len(vs) > 1 && !strings.HasSuffix(name, "[]") {
				t.Fatalf("accepted %q: %q = %q", raw, name, vs)
			}
			for _, v := range vs {
				if !utf8.ValidString(v) {
					t.Fatalf("accepted %q: %q = %q", raw, name, v)
				}
			}
		}
	})
}

// TestStreamedBodies: with StreamBody, the requests it selects get their body as a stream of
// whatever length (the handler bounds it), and every other body is still read whole under
// BodyLimit, over the wire, chunked or not.
func TestStreamedBodies(t *testing.T) {
	signer, err := identity.NewSigner([]byte(strings.Repeat("k", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	app := New(Config{Service: "test", Logger: log, Signer: signer, BodyLimit: 64,
		StreamBody: func(c *fiber.Ctx) bool { return c.Path() == "/v1/upload" }})
	app.Post("/v1/upload", func(c *fiber.Ctx) error {
		if !c.Request().IsBodyStream() {
			return errors.New("the upload was not streamed")
		}
		n, err := io.Copy(io.Discard, c.Context().RequestBodyStream())
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"read": n})
	})
	app.Post("/v1/things", func(c *fiber.Ctx) error {
		var p payload
		if err := DecodeJSON(c, &p); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"name": p.Name})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer app.Shutdown()
	send := func(path string, body io.Reader, size int64) (int, string) {
		t.Helper()
		req := signed(signer, "POST", path, "")
		req.Body, req.ContentLength = io.NopCloser(body), size // -1: chunked
		req.Header.Set("Content-Type", "application/json")
		req.URL.Scheme, req.URL.Host, req.RequestURI = "http", ln.Addr().String(), ""
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	big := strings.Repeat("x", 1<<20)
	for _, size := range []int64{int64(len(big)), -1} {
		if status, body := send("/v1/upload", strings.NewReader(big), size); status != 200 || body != `{"read":1048576}` {
			t.Errorf("upload (length %d): %d %s", size, status, body)
		}
		small := `{"name":"ok"}`
		if status, body := send("/v1/things", strings.NewReader(small), map[bool]int64{true: int64(len(small)), false: -1}[size > 0]); status != 200 || body != `{"name":"ok"}` {
			t.Errorf("small JSON body (chunked %v): %d %s", size < 0, status, body)
		}
		// Over the limit but small enough for the server to drain, so the client reads the 413
		// rather than a reset connection.
		over := `{"name":"` + strings.Repeat("y", 1000) + `"}`
		if status, body := send("/v1/things", strings.NewReader(over), map[bool]int64{true: int64(len(over)), false: -1}[size > 0]); status != 413 || !strings.Contains(body, apierr.CodeBodyTooLarge) {
			t.Errorf("JSON body over the limit (chunked %v): %d %s", size < 0, status, body)
		}
	}
}

// /readyz: a failing check that degrades leaves the program ready (200, "degraded"); any other
// failing check makes it unavailable (503); every result is reported.
func TestReadiness(t *testing.T) {
	down := func(context.Context) error { return errors.New("down") }
	up := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name       string
		checks     []Check
		wantCode   int
		wantStatus string
	}{
		{"all up", []Check{{Name: "store", Fn: up}, {Name: "queue", Fn: up, Degrades: true}}, 200, "ready"},
		{"degrading one down", []Check{{Name: "store", Fn: up}, {Name: "queue", Fn: down, Degrades: true}}, 200, "degraded"},
		{"required one down", []Check{{Name: "store", Fn: down}, {Name: "queue", Fn: up, Degrades: true}}, 503, "unavailable"},
		{"both down", []Check{{Name: "queue", Fn: down, Degrades: true}, {Name: "store", Fn: down}}, 503, "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := fiber.New()
			Health(app, slog.New(slog.DiscardHandler), tc.checks...)
			resp, err := app.Test(httptest.NewRequest("GET", "/readyz", nil))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantCode || got.Status != tc.wantStatus || len(got.Checks) != len(tc.checks) {
				t.Fatalf("/readyz = %d %+v; want %d %s", resp.StatusCode, got, tc.wantCode, tc.wantStatus)
			}
			for _, c := range tc.checks {
				if want := map[bool]string{true: "ok", false: "down"}[c.Fn(context.Background()) == nil]; got.Checks[c.Name] != want {
					t.Fatalf("check %s = %q; want %q", c.Name, got.Checks[c.Name], want)
				}
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	app := fiber.New()
	app.Get("/v1/things/:id", func(*fiber.Ctx) error { return nil })
	app.Post("/v1/things", func(*fiber.Ctx) error { return nil })
	got := Routes(app)
	if len(got) != 2 || !slices.Contains(got, [2]string{"GET", "/v1/things/:id"}) || !slices.Contains(got, [2]string{"POST", "/v1/things"}) {
		t.Fatalf("Routes = %v", got)
	}
}

func TestNoQuery(t *testing.T) {
	var got error
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error { got = err; return c.SendStatus(400) }})
	app.Get("/v1/things/:id", NoQuery(func(c *fiber.Ctx) error { return c.SendString("ok") }))
	for _, tc := range []struct {
		query string
		code  string // "" for none: the handler ran
		param string
	}{
		{"", "", ""},
		{"?", "", ""},
		{"?expand=x", "parameter_unknown", "expand"},
		{"?z=1&a=2", "parameter_unknown", "a"},
		{"?limit=1&limit=2", "parameter_duplicate", "limit"},
	} {
		got = nil
		resp, err := app.Test(httptest.NewRequest("GET", "/v1/things/t_1"+tc.query, nil))
		if err != nil {
			t.Fatal(err)
		}
		e := apierr.From(got)
		switch {
		case tc.code == "" && (resp.StatusCode != 200 || got != nil):
			t.Errorf("%q: %d %v, want the handler's answer", tc.query, resp.StatusCode, got)
		case tc.code != "" && (e == nil || e.Code != tc.code || e.Param != tc.param):
			t.Errorf("%q: %v, want %s naming %q", tc.query, got, tc.code, tc.param)
		}
	}
}
