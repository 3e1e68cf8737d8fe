package service

import (
	"context"
	"errors"
	"fmt"
	"io"

	"rentalplatform/libs/config"
)

// Spec is what the shared runtime needs to know of one service: its name (in logs, traces and
// the MongoDB application name) and its defaults for HTTP_ADDR and MONGODB_DATABASE.
type Spec struct {
	Name          string // "payments-svc"
	HTTPAddr      string // default HTTP_ADDR, "127.0.0.1:8093"
	MongoDatabase string // default MONGODB_DATABASE, "payments"
}

// Defaults are the service's defaults of the shared settings.
func (s Spec) Defaults() config.Defaults {
	return config.Defaults{HTTPAddr: s.HTTPAddr, MongoDatabase: s.MongoDatabase}
}

// LoadBase reads the settings every service shares (docs/operations.md), with this
// service's defaults, reporting every problem at once. A service with settings of its own
// calls it from its loadConfig and embeds the result in its Config.
func (s Spec) LoadBase(getenv config.Getenv) (config.Base, error) {
	base, err := config.LoadBase(getenv, s.Defaults())
	if err != nil {
		return config.Base{}, fmt.Errorf("config: %w", err)
	}
	return base, nil
}

// Run is the life of a service that reads only the shared settings: it reads them once,
// starts the runtime, lets compose add the service's own adapters, use cases, routes, checks
// and shutdown steps (nil: none yet), and serves until ctx ends. On a compose error everything
// started is closed again.
//
// A service with settings of its own keeps the same steps in its run(): loadConfig (which
// calls LoadBase), Start with its Config's Base, compose, Serve.
func (s Spec) Run(ctx context.Context, getenv config.Getenv, stdout io.Writer, compose func(context.Context, *Runtime) error) error {
	base, err := s.LoadBase(getenv)
	if err != nil {
		return err
	}
	rt, err := Start(ctx, s.Name, base, stdout)
	if err != nil {
		return err
	}
	if compose != nil {
		if err := compose(ctx, rt); err != nil {
			return errors.Join(err, rt.Close())
		}
	}
	return rt.Serve(ctx)
}
