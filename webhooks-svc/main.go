// Command webhooks-svc serves the webhook endpoints API behind the gateway.
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
	// `webhooks-svc -healthcheck` asks its own /healthz: the image's HEALTHCHECK.
	if code, ok := healthcheck.Main(os.Args[1:], os.Getenv, "HTTP_ADDR", spec().HTTPAddr, os.Stderr); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhooks-svc:", err)
		os.Exit(1)
	}
}
