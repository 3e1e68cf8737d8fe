// Command local runs the whole Rental Platform on one machine (`make run`).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"rentalplatform/deploy/local/stack"
)

func main() {
	// SIGHUP too: closing the terminal is a common way to end `make run`, and a clean stop is
	// what keeps the embedded Redis's idempotency records and queues (stack.Stop).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	stack.TuneEmbeddedGC(os.Getenv)
	err := run(ctx, os.Environ(), os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local stack:", err)
		os.Exit(1)
	}
}
