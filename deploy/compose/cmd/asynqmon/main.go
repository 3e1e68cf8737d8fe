// Command asynqmon is the asynq queue dashboard of deploy/compose: asynqmon's own handler
// (github.com/hibiken/asynqmon, whose module ships the built web UI), wrapped so that it is
// configured like the platform's programs, from the environment alone, and is read-only
// unless told otherwise: the dashboard can delete and re-run tasks, which an operator looking
// at a queue should not do by a stray click.
//
// Settings: ASYNQMON_ADDR [127.0.0.1:8980], REDIS_URL [redis://127.0.0.1:6379/0] (the
// platform's queues), ASYNQMON_READ_ONLY [true]. `asynqmon -healthcheck` asks its /healthz.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynqmon"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/config"
	"rentalplatform/libs/healthcheck"
)

const defaultAddr = "127.0.0.1:8980"

func main() {
	if code, ok := healthcheck.Main(os.Args[1:], os.Getenv, "ASYNQMON_ADDR", defaultAddr, os.Stderr); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stdout, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "asynqmon:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; listening, when not nil, is told the bound address (tests).
func run(ctx context.Context, getenv config.Getenv, stdout io.Writer, listening func(string)) error {
	r := config.NewReader(getenv)
	addr := r.String("ASYNQMON_ADDR", defaultAddr)
	redisURL := r.String("REDIS_URL", "redis://127.0.0.1:6379/0")
	readOnly := r.Bool("ASYNQMON_READ_ONLY", true)
	if err := r.Err(); err != nil {
		return err
	}
	opt, err := asynqx.RedisOpt(redisURL)
	if err != nil {
		return err
	}
	dash := asynqmon.New(asynqmon.Options{RootPath: "/", RedisConnOpt: opt, ReadOnly: readOnly})
	defer dash.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	})
	mux.Handle("/", dash)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil)).With("service", "asynqmon")
	log.Info("listening", "listener", "http", "addr", ln.Addr().String(), "read_only", readOnly)
	if listening != nil {
		listening(ln.Addr().String())
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
