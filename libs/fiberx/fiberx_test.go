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
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/health"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/request"
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
	health.Health(app, log, health.Check{Name: "ok", Fn: func(context.Context) error { return nil }})
	app.Post("/v1/things", func(c *fiber.Ctx) error {
		var p payload
		if err := request.DecodeJSON(c, &p); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"name": p.Name, "account": Identity(c).Account})
	})
	app.Get("/v1/list", func(c *fiber.Ctx) error {
		q, err := request.Query(c)
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
		if err := request.DecodeJSON(c, &p); err != nil {
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

func TestRoutes(t *testing.T) {
	app := fiber.New()
	app.Get("/v1/things/:id", func(*fiber.Ctx) error { return nil })
	app.Post("/v1/things", func(*fiber.Ctx) error { return nil })
	got := Routes(app)
	if len(got) != 2 || !slices.Contains(got, [2]string{"GET", "/v1/things/:id"}) || !slices.Contains(got, [2]string{"POST", "/v1/things"}) {
		t.Fatalf("Routes = %v", got)
	}
}
