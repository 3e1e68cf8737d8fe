package http

import (
	"testing"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/api"
	"rentalplatform/api/contract"
	"rentalplatform/libs/fiberx"
)

// Every route the service registers is an operation of the API's contract, and every
// operation of the contract under its paths is a route.
func TestRoutesAreInTheContract(t *testing.T) {
	app := fiber.New()
	Register(app, nil, StreamConfig{})
	for _, p := range contract.RouteProblems(api.PublicJSON(), fiberx.Routes(app), "/v1/webhook_endpoints", "/v1/events", "/v1/webhook_deliveries", "/v1/event_types") {
		t.Error(p)
	}
}
