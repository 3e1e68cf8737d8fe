package main

import (
	"context"
	"io"

	"rentalplatform/libs/service"
)

// run is the composition root: it builds the service from its configuration and serves until
// ctx ends. The service has no resources yet: it checks the gateway identity, answers health
// checks, and 404s every other route.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	rt, err := service.Start(ctx, serviceName, cfg.Base, stdout)
	if err != nil {
		return err
	}
	return rt.Serve(ctx)
}
