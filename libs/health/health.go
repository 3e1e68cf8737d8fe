// Package health serves a program's liveness and readiness endpoints from its dependency
// checks.
package health

import (
	"context"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Check is one readiness dependency.
type Check struct {
	Name string
	Fn   func(context.Context) error
	// Degrades marks a dependency the program serves without, less well (Redis, whose loss
	// the outbox, the sweeps and the gateway's fail-open limits absorb; the gateway's services,
	// each only its own routes): its failure is reported but leaves the program ready. A
	// shared dependency that took every replica out of its load balancer would turn a partial
	// outage into a whole one.
	Degrades bool
}

// Health registers /healthz (the process is alive) and /readyz: 200 "ready" when every check
// passes within 2 s, 200 "degraded" when only checks that Degrades fail, else 503
// "unavailable"; each check's result is in "checks".
func Health(app *fiber.App, log *slog.Logger, checks ...Check) {
	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	})
	app.Get("/readyz", func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		defer cancel()
		results := fiber.Map{}
		status := "ready"
		for _, ch := range checks {
			if err := ch.Fn(ctx); err != nil {
				results[ch.Name] = err.Error()
				log.WarnContext(ctx, "readiness check failed", "check", ch.Name, "error", err.Error(), "degrades", ch.Degrades)
				switch {
				case !ch.Degrades:
					status = "unavailable"
				case status == "ready":
					status = "degraded"
				}
				continue
			}
			results[ch.Name] = "ok"
		}
		if status == "unavailable" {
			c.Status(fiber.StatusServiceUnavailable)
		}
		return c.JSON(fiber.Map{"status": status, "checks": results})
	})
}
