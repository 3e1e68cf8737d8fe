package main

import (
	"context"
	"errors"
	"io"
	"time"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/service"

	"rentalplatform/webhooks-svc/internal/adapters/mongo"
	"rentalplatform/webhooks-svc/internal/app"
	httpport "rentalplatform/webhooks-svc/internal/ports/http"
)

// run is the composition root: it builds the service from its configuration, serves until
// ctx ends, then shuts down and returns the first problem met.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	rt, err := service.Start(ctx, serviceName, cfg.Base, stdout)
	if err != nil {
		return err
	}
	repo := mongo.NewRepository(rt.DB)
	if err := repo.EnsureIndexes(ctx); err != nil {
		return errors.Join(err, rt.Close())
	}
	svc := app.New(repo, app.ClockFunc(time.Now), ids.NewGenerator(nil))
	httpport.Register(rt.App, svc)
	return rt.Serve(ctx)
}
