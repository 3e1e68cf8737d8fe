// Command ferretdb is the MongoDB of deploy/compose/compose.ci.yaml: FerretDB v1.24 with its
// SQLite backend, embedded exactly as `make run` and the tests embed it
// (rentalplatform/embedded/mongostore: the write gate, the _id index FerretDB's writes need,
// background checkpoints). No MongoDB image can be pulled on the machines that run
// `make compose-test`, and it is the store every other test of the platform uses.
//
// It is a development store (DESIGN.md §6): no transactions, no TTL indexes, one process per
// database (docs/operations.md, scaling). Settings (environment only): FERRETDB_ADDR
// [127.0.0.1:27017], FERRETDB_DIR [/data] (the SQLite files; the image's /data belongs to
// the program's user). `ferretdb -healthcheck` pings it over the MongoDB wire protocol.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/embedded/mongostore"
	"rentalplatform/libs/config"
	"rentalplatform/libs/healthcheck"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	r := config.NewReader(getenv)
	addr := r.String("FERRETDB_ADDR", "127.0.0.1:27017")
	dir := r.String("FERRETDB_DIR", "/data")
	switch {
	case len(args) == 1 && args[0] == healthcheck.Flag:
		return ping(addr)
	case len(args) > 0:
		return fmt.Errorf("unexpected arguments %q (settings come from the environment)", args)
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil)).With("service", "ferretdb")
	store, err := mongostore.Start(ctx, mongostore.Options{Dir: dir, Addr: addr})
	if err != nil {
		if ctx.Err() != nil {
			// Stopped (SIGTERM) before it was ready: Start has already shut FerretDB down,
			// so this is the clean stop that was asked for, not a start-up failure.
			log.Info("stopped before ready")
			return nil
		}
		return err
	}
	log.Info("listening", "listener", "mongodb", "addr", addr, "dir", dir)
	<-ctx.Done()
	log.Info("stopping")
	return store.Close()
}

// ping is the image's HEALTHCHECK: a MongoDB ping, since a TCP connect alone would succeed
// on the kernel's backlog before FerretDB serves.
func ping(addr string) error {
	target, err := healthcheck.ProbeAddr(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthcheck.Timeout)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + target + "/").
		SetDirect(true).SetServerSelectionTimeout(healthcheck.Timeout).SetConnectTimeout(time.Second))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	return client.Ping(ctx, nil)
}
