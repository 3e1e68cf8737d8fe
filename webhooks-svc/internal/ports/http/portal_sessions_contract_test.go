package http

import (
	"testing"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/api"
	"rentalplatform/api/contract"
	"rentalplatform/libs/fiberx"
)

// POST /v1/webhook_portal_sessions is the contract's only operation under its path.
func TestPortalSessionRoutesAreInTheContract(t *testing.T) {
	app := fiber.New()
	RegisterPortalSessions(app, nil, PortalConfig{})
	for _, p := range contract.RouteProblems(api.PublicJSON(), fiberx.Routes(app), "/v1/webhook_portal_sessions") {
		t.Error(p)
	}
}
