// Command gateway is the public edge of the Rental Platform API: it authenticates API keys,
// routes /v1 requests to the service that owns the resource with a signed identity, and
// serves the admin API that manages keys.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"rentalplatform/libs/healthcheck"
)

func main() {
	// `gateway -healthcheck` asks the public listener's /healthz: the image's HEALTHCHECK.
	if code, ok := healthcheck.Main(os.Args[1:], os.Getenv, "GATEWAY_ADDR", defaultPublicAddr, os.Stderr); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
