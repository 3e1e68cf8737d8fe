package fiberx

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/identity"
)

// A hosted page takes the gateway's hosted-page identity and nothing else; every other route
// refuses that identity, as it refuses a forged one.
func TestHostedPages(t *testing.T) {
	signer, err := identity.NewSigner([]byte(strings.Repeat("k", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	app := New(Config{Service: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Signer: signer, HostedPages: []string{"/verify/"}})
	who := func(c *fiber.Ctx) error { return c.SendString(Identity(c).Account + " " + RequestID(c)) }
	app.Get("/verify/:id", who)
	app.Get("/v1/things", who)

	hosted := identity.Identity{Account: identity.HostedAccount, RequestID: "req_h"}
	api := identity.Identity{Account: "acct_a", RequestID: "req_a"}
	for _, tc := range []struct {
		name   string
		id     *identity.Identity // nil: unsigned
		path   string
		status int
		body   string
	}{
		{"hosted identity on the hosted page", &hosted, "/verify/vs_1", 200, "hosted-page req_h"},
		{"API identity on the hosted page", &api, "/verify/vs_1", 401, ""},
		{"unsigned on the hosted page", nil, "/verify/vs_1", 401, ""},
		{"hosted identity on an API route", &hosted, "/v1/things", 401, ""},
		{"API identity on an API route", &api, "/v1/things", 200, "acct_a req_a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.id != nil {
				signer.Sign(req.Header.Set, *tc.id, "GET", tc.path)
			}
			resp, env, body := do(t, app, req)
			if resp.StatusCode != tc.status {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 200 && string(body) != tc.body {
				t.Fatalf("body %q, want %q", body, tc.body)
			}
			if tc.status == 401 && env.Error.Code != apierr.CodeIdentityInvalid {
				t.Fatalf("got %s, want %s", body, apierr.CodeIdentityInvalid)
			}
		})
	}
}
