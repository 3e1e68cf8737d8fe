// Command rental is the Rental Platform API's command line: it stores an API key per profile
// and calls the API (get, post, delete), with an Idempotency-Key on every POST.
//
// docs/cli.md describes every command.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
