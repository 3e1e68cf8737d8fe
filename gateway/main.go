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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
