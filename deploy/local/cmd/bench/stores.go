package main

// The embedded stores in a process of their own. Hosted in the bench process, as `make run`
// hosts them in the launcher, FerretDB and miniredis would share its CPU time with the load
// generator and the TLS receiver, and what a unit of work costs the stores could not be told
// apart from what it costs to send it (issue 31, point 5). So the bench starts its own binary
// again in the "serve-stores" mode, which hosts them, and hands their URLs to the stack as if
// they were external servers. The platform behaves as it does under `make run`: docstore picks
// its strategy from the server's buildInfo, which is FerretDB's either way.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"rentalplatform/deploy/local/stack"
	"rentalplatform/embedded/mongostore"
	"rentalplatform/embedded/redisstore"
)

// storesModeArg is the first argument that runs the bench binary as the stores' host.
const storesModeArg = "serve-stores"

// What the stores' host prints on its standard output, one line each, before it serves.
const (
	storesMongoPrefix = "MONGODB_URI="
	storesRedisPrefix = "REDIS_URL="
	storesReady       = "ready"
)

// serveStores runs the bench binary as the host of the embedded stores when args ask for it
// ("serve-stores [-mongo-dir DIR] [-redis] [-cpuprofile FILE]"): FerretDB on DIR's SQLite files
// when -mongo-dir is given, miniredis when -redis is; it prints their URLs, then serves until
// its standard input ends (the bench closes it, or dies) or it gets SIGTERM. It reports whether
// args asked for this mode.
func serveStores(args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) (bool, error) {
	if len(args) == 0 || args[0] != storesModeArg {
		return false, nil
	}
	fs := flag.NewFlagSet(storesModeArg, flag.ContinueOnError)
	mongoDir := fs.String("mongo-dir", "", "host FerretDB with its SQLite files in this folder")
	withRedis := fs.Bool("redis", false, "host miniredis")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the stores' process to this file")
	if err := fs.Parse(args[1:]); err != nil {
		return true, err
	}
	if *mongoDir != "" {
		// The collector settings of a process hosting FerretDB, as make run's launcher has
		// them (unless GOGC / GOMEMLIMIT are set).
		stack.TuneEmbeddedGC(getenv)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return true, err
		}
		defer stop()
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	if *mongoDir != "" {
		m, err := mongostore.Start(ctx, mongostore.Options{Dir: *mongoDir})
		if err != nil {
			return true, fmt.Errorf("embedded MongoDB-compatible store: %w", err)
		}
		defer func() { _ = m.Close() }()
		fmt.Fprintln(stdout, storesMongoPrefix+m.URI())
	}
	if *withRedis {
		// redisstore moves miniredis's clock in steps and expires keys with it, as the stack's
		// embedded Redis does: TTLs, locks and asynq's leases behave as on Redis.
		r, err := redisstore.Start(redisstore.Options{})
		if err != nil {
			return true, fmt.Errorf("embedded Redis: %w", err)
		}
		defer r.Close()
		fmt.Fprintln(stdout, storesRedisPrefix+r.URL())
	}
	fmt.Fprintln(stdout, storesReady)

	// Until the bench closes our standard input (or dies, which closes it too), or SIGTERM.
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(eof)
	}()
	select {
	case <-eof:
	case <-ctx.Done():
	}
	return true, nil
}

// storesProcess is the running host of the embedded stores (serveStores).
type storesProcess struct {
	MongoURI string // empty when MONGODB_URI names a server
	RedisURL string // empty when REDIS_URL names one
	LogPath  string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process has exited
	dir   string        // FerretDB's files
	log   *os.File
}

// startStores starts the host of the stores that getenv does not name (MONGODB_URI,
// REDIS_URL) and waits until they answer; nil when both are named. Its logs (FerretDB's errors)
// go to a file under .data, beside the stack's; profile, when set, is where it writes a CPU
// profile of itself.
func startStores(ctx context.Context, getenv func(string) string, profile string, stdout io.Writer) (p *storesProcess, err error) {
	embedMongo, embedRedis := getenv("MONGODB_URI") == "", getenv("REDIS_URL") == ""
	if !embedMongo && !embedRedis {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p = &storesProcess{done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if err := os.MkdirAll(".data", 0o755); err != nil {
		return nil, err
	}
	if p.log, err = os.CreateTemp(".data", "bench-stores-*.log"); err != nil {
		return nil, err
	}
	if p.LogPath, err = filepath.Abs(p.log.Name()); err != nil {
		return nil, err
	}
	args := []string{storesModeArg}
	var hosted []string
	if embedMongo {
		if p.dir, err = os.MkdirTemp("", "rental-bench-stores-"); err != nil {
			return nil, err
		}
		args = append(args, "-mongo-dir", p.dir)
		hosted = append(hosted, "FerretDB")
	}
	if embedRedis {
		args = append(args, "-redis")
		hosted = append(hosted, "miniredis")
	}
	if profile != "" {
		args = append(args, "-cpuprofile", profile)
	}
	fmt.Fprintf(stdout, "Starting the embedded stores (%s) in a process of their own (its logs go to %s)...\n", strings.Join(hosted, " and "), p.LogPath)

	cmd := exec.Command(self, args...)
	cmd.Stderr = p.log
	// A group of its own: a Ctrl-C in the terminal reaches only the bench, which stops the
	// platform's programs before the stores they write to.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// Its standard output through a pipe of ours rather than StdoutPipe, which Wait would close
	// under the reader: Wait returns once everything printed has been copied into it.
	out, outW := io.Pipe()
	cmd.Stdout = outW
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the stores' process: %w", err)
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait()
		outW.Close()
		close(p.done)
	}()

	// Its lines until "ready", then whatever else it prints, to the log.
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, storesMongoPrefix):
				p.MongoURI = strings.TrimPrefix(line, storesMongoPrefix)
			case strings.HasPrefix(line, storesRedisPrefix):
				p.RedisURL = strings.TrimPrefix(line, storesRedisPrefix)
			case line == storesReady:
				ready <- nil
				_, _ = io.Copy(p.log, out)
				return
			}
		}
		ready <- errors.New("it ended before its stores were ready")
	}()
	select {
	case err = <-ready:
	case <-time.After(2 * time.Minute):
		err = errors.New("its stores were not ready within 2 minutes")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("the stores' process: %w (its log: %s)", err, p.LogPath)
	}
	return p, nil
}

// PID is the process's id; 0 for no process (both stores external).
func (p *storesProcess) PID() int {
	if p == nil || p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// getenv is the stack's view of the environment: the stores' URLs as if external servers
// were named, everything else as in getenv.
func (p *storesProcess) getenv(getenv func(string) string) func(string) string {
	return func(k string) string {
		switch {
		case p != nil && k == "MONGODB_URI" && p.MongoURI != "":
			return p.MongoURI
		case p != nil && k == "REDIS_URL" && p.RedisURL != "":
			return p.RedisURL
		}
		return getenv(k)
	}
}

// Stop ends the process, once the platform is stopped (its programs write to the stores until
// then): its standard input closed, it closes FerretDB (which checkpoints and closes its SQLite
// files) and miniredis, and exits; killed if it has not within 15 s. FerretDB's files are then
// removed. It says so on standard error when the process had ended before (the figures after
// that point are not the platform's).
func (p *storesProcess) Stop() {
	if p == nil {
		return
	}
	if p.cmd != nil {
		select {
		case <-p.done:
			fmt.Fprintf(os.Stderr, "bench: the stores' process had ended before the bench stopped it (%v); its log: %s\n", p.cmd.ProcessState, p.LogPath)
		default:
		}
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if p.log != nil {
		_ = p.log.Close()
	}
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}
