package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"rentalplatform/libs/config"
	"rentalplatform/libs/healthcheck"
)

// Spec is what the shared runtime needs to know of one service: its name (in logs, traces and
// the MongoDB application name) and its defaults for HTTP_ADDR and MONGODB_DATABASE. A
// service's loadConfig reads the shared settings with them (config.LoadBase(getenv,
// spec().Defaults())) beside its own, and its run() starts with Start(ctx, spec().Name, …).
type Spec struct {
	Name          string // "payments-svc"
	HTTPAddr      string // default HTTP_ADDR, "127.0.0.1:8093"
	MongoDatabase string // default MONGODB_DATABASE, "payments"
}

// Defaults are the service's defaults of the shared settings.
func (s Spec) Defaults() config.Defaults {
	return config.Defaults{HTTPAddr: s.HTTPAddr, MongoDatabase: s.MongoDatabase}
}

// Main is a service's main(): `<name> -healthcheck` asks the service's own /healthz (the
// image's HEALTHCHECK); otherwise it runs run until SIGINT or SIGTERM, and exits 1 with the
// error, named after the service, on stderr.
func (s Spec) Main(run func(ctx context.Context, getenv func(string) string, stdout io.Writer) error) {
	Main(s.Name, "HTTP_ADDR", s.HTTPAddr, run)
}

// Main is the main() of a program whose listener is addrVariable (default defaultAddr): the
// gateway's is GATEWAY_ADDR. See Spec.Main.
func Main(name, addrVariable, defaultAddr string, run func(ctx context.Context, getenv func(string) string, stdout io.Writer) error) {
	if code, ok := healthcheck.Main(os.Args[1:], os.Getenv, addrVariable, defaultAddr, os.Stderr); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
