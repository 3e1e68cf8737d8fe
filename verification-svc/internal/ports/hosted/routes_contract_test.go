package hosted

import (
	"testing"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/api"
	"rentalplatform/api/contract"
	"rentalplatform/libs/fiberx"
)

// The page's routes are the contract's /verify operations, and nothing else is under /verify.
func TestRoutesAreInTheContract(t *testing.T) {
	app := fiber.New()
	if err := Register(app, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range contract.RouteProblems(api.PublicJSON(), fiberx.Routes(app), "/verify") {
		t.Error(p)
	}
}
