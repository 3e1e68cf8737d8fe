package main

import (
	"context"
	"io"
)

// run is the composition root. The service has no resources yet: the shared runtime checks the
// gateway identity, answers health checks, and 404s every other route.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	return spec().Run(ctx, getenv, stdout, nil)
}
