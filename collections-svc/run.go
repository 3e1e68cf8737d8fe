package main

import (
	"context"
	"errors"
	"io"
	"time"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/service"

	"rentalplatform/collections-svc/internal/adapters/mongo"
	"rentalplatform/collections-svc/internal/app"
	httpport "rentalplatform/collections-svc/internal/ports/http"
)

// run is the composition root: it builds the service from its configuration, serves until
// ctx ends, then shuts down and returns the first problem met.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	// File uploads are streamed to GridFS as they arrive rather than read whole first.
	rt, err := service.Start(ctx, spec().Name, cfg.Base, stdout, service.WithStreamedBodies(httpport.IsUpload))
	if err != nil {
		return err
	}
	fail := func(err error) error { return errors.Join(err, rt.Close()) }
	q, err := rt.ConnectQueue(cfg.QueueConfig)
	if err != nil {
		return fail(err)
	}
	gen := ids.NewGenerator(nil)
	// The events' objects are rendered as the HTTP port answers them.
	cases := mongo.NewCases(rt.Store, q.Relay, httpport.CaseEvents(gen, time.Now))
	files := mongo.NewFiles(rt.Store, q.Relay, httpport.FileEvents(gen, time.Now))
	contents := mongo.NewContents(rt.Store)
	if err := service.EnsureIndexes(ctx, cases, files, contents); err != nil {
		return fail(err)
	}

	svc := app.New(app.Deps{
		Cases:    cases,
		Files:    files,
		Contents: contents,
		Now:      time.Now,
		IDs:      gen,
		Log:      rt.Log,
	}, app.Config{
		Partner: cfg.Partner,
	})
	// Closers run last-registered first: this one before the store closes.
	rt.OnClose(svc.Drain)
	httpport.Register(rt.App, svc)
	return rt.Serve(ctx)
}
