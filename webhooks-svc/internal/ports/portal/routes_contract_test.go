package portal

import (
	"testing"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/api"
	"rentalplatform/api/contract"
	"rentalplatform/libs/fiberx"
)

// The portal's routes are the contract's /portal operations, and nothing else is under /portal.
func TestRoutesAreInTheContract(t *testing.T) {
	app := fiber.New()
	if err := Register(app, nil, Config{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range contract.RouteProblems(api.PublicJSON(), fiberx.Routes(app), "/portal") {
		t.Error(p)
	}
}
