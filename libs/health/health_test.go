package health

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
)

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
