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
	"strings"
	"testing"

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
