// Package stack starts the whole platform on one machine: the embedded MongoDB-compatible store
// and Redis when no real ones are given, then the four services and the gateway as separate
// processes built from this workspace. `make run`, the end-to-end tests and the benchmark all
// start it through here, so they exercise the same thing.
package stack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"rentalplatform/embedded/mongostore"
	"rentalplatform/embedded/redisstore"
)

// Programs in start order: the services first, the gateway (which needs their addresses) last.
// AddrVar is the launcher's variable that fixes a service's address; unset, the service takes
// a free port on 127.0.0.1, since only the gateway's and the admin API's addresses face the
// user, and fixed service ports would keep two stacks from running side by side. Settings are
// the variables of Options.Environ a program is given, each a prefix (ending in "_") or a
// whole name: the ones it reads (docs/operations.md, "Environment variables").
var services = []struct {
	Name, Database, AddrVar string
	Settings                []string
}{
	{"verification-svc", "verification", "VERIFICATION_ADDR", []string{"VERIFICATION_", "OUTBOX_"}},
	{"collections-svc", "collections", "COLLECTIONS_ADDR", []string{"COLLECTIONS_", "OUTBOX_"}},
	{"payments-svc", "payments", "PAYMENTS_ADDR", []string{"PAYMENTS_", "OUTBOX_"}},
	{"webhooks-svc", "webhooks", "WEBHOOKS_ADDR", []string{"WEBHOOKS_", "OUTBOX_", "EVENTS_"}},
}

// ServiceAddrVars maps each service to the variable that fixes its address (Options.ServiceAddrs).
func ServiceAddrVars() map[string]string {
	m := make(map[string]string, len(services))
	for _, svc := range services {
		m[svc.Name] = svc.AddrVar
	}
	return m
}

// What the stack keeps in Options.DataDir.
const (
	binDir        = "bin"        // the five programs, built for this start
	mongoDir      = "mongo"      // the embedded store's SQLite files
	redisSnapshot = "redis.json" // what the embedded Redis keeps across a clean stop
)

// keptRedis are the key prefixes of the embedded Redis that a clean stop keeps in
// DataDir/redis.json and the next start restores, with their expiries:
//   - the gateway's idempotency records (gateway/internal/adapters/redis), so a client that
//     retries after a restart gets the first answer instead of a second object;
//   - asynq's queues: an event published (and cleared from its outbox) but not yet consumed
//     lives only there, and delivery attempts keep their schedule instead of waiting for
//     webhooks-svc's overdue sweep.
//
// Not kept: rate-limit windows and failed-authentication counters (rate:…), which start
// afresh (at worst one burst more is let through); the locks of requests in flight
// (gw:idemlock:…), of which a clean stop leaves none: the gateway finishes its requests first;
// and the outbox relays' markers (outbox:epoch:…), so that every start has each relay publish
// again the events its outboxes retain from the last OUTBOX_RETENTION: after a kill, what the
// queue held since the last clean stop comes back that way (libs/outbox, retention.go); what a
// restored queue holds already is a task-id conflict, or an event webhooks-svc has stored.
var keptRedis = []string{"gw:idem:", "asynq:", "payments:"}

// gatewaySettings are the gateway's, as Settings above.
var gatewaySettings = []string{"GATEWAY_", "ADMIN_", "UPSTREAM_TIMEOUT", "BODY_LIMIT", "UPLOAD_BODY_LIMIT"}

// everyProgram are the settings every program reads, and what a Go program needs of its
// surroundings.
var everyProgram = []string{"LOG_LEVEL", "SHUTDOWN_TIMEOUT", "PROFILES_ENABLED", "OTEL_", "DEPLOYMENT_ENVIRONMENT", "PATH", "HOME", "TMPDIR"}

// stackSet are the variables the stack sets itself (and the service URLs of
// gatewayUpstreamVar): never taken from Options.Environ, so the processes always find each
// other, their store and their shared secret.
var stackSet = []string{
	"HTTP_ADDR", "MONGODB_URI", "MONGODB_DATABASE", "REDIS_URL", "INTERNAL_AUTH_SECRET",
	"GATEWAY_ADDR", "ADMIN_ADDR", "ADMIN_TOKEN",
	"VERIFICATION_ADDR", "COLLECTIONS_ADDR", "PAYMENTS_ADDR", "WEBHOOKS_ADDR",
}

// gatewayUpstreamVar names the gateway variable that points at each service.
var gatewayUpstreamVar = map[string]string{
	"verification-svc": "VERIFICATION_URL",
	"collections-svc":  "COLLECTIONS_URL",
	"payments-svc":     "PAYMENTS_URL",
	"webhooks-svc":     "WEBHOOKS_URL",
}

// Options configure Start.
type Options struct {
	RepoRoot string // the folder holding go.work
	// DataDir holds the programs built for this start (bin/), the embedded store (mongo/), what
	// the embedded Redis keeps across a clean stop (redis.json) and the dev key.
	DataDir string
	// MongoURI and RedisURL point at real servers; empty starts the embedded ones.
	MongoURI string
	RedisURL string
	// DatabasePrefix is put before every database name (tests sharing one real server).
	DatabasePrefix string
	GatewayAddr    string
	AdminAddr      string
	// ServiceAddrs fixes the address of a service, by name ("webhooks-svc"); a service not in
	// it takes a free port on 127.0.0.1.
	ServiceAddrs map[string]string
	AdminToken   string // empty: a random one for this run
	DevAPIKey    string // empty: the one kept in DataDir, or a new one
	// Environ is the caller's environment ("NAME=value", as os.Environ): each program is given
	// the variables of it that it documents (its Settings, and everyProgram's), none that the
	// stack sets itself, and nothing else.
	Environ []string
	Env     map[string]string // passed to every program (PATH, LOG_LEVEL, OTEL_*, ...); wins over Environ
	// ProgramEnv adds variables to one program, by name ("webhooks-svc", "gateway", …), on
	// top of Env and of what the stack sets itself (which it may override, HTTP_ADDR too).
	ProgramEnv map[string]map[string]string
	Output     io.Writer // the programs' logs, each line prefixed with its name
	// Programs is a folder holding the five programs built already (Build), which this start
	// runs as they are; empty: Start builds them into DataDir/bin. A test suite starting many
	// stacks builds once: linking the five costs some 20 s of CPU each time.
	Programs string
}

// Stack is a running platform.
type Stack struct {
	GatewayURL string
	AdminURL   string
	AdminToken string
	DevAPIKey  string
	// ServiceURLs maps each service to its own (internal) address.
	ServiceURLs map[string]string
	// MetricsURLs maps each program (the gateway too) to its Prometheus scrape endpoint, on its
	// internal metrics listener (METRICS_ADDR, by default the service's own port or the
	// gateway's admin port + 1000; port 0 stays a free port).
	MetricsURLs        map[string]string
	InternalAuthSecret string
	MongoURI           string
	RedisURL           string
	DatabasePrefix     string
	// Embedded names the parts started in-process ("MongoDB (FerretDB …)", "Redis (miniredis)").
	Embedded []string

	mongo    *mongostore.Store
	redis    *redisstore.Store
	keepFile string // where the embedded Redis keeps what a clean stop keeps
	out      io.Writer
	starter  *starter
	mu       sync.Mutex // guards procs and the start of a program against Stop
	procs    []*proc    // the latest process of each program, in start order
	programs map[string]*program
	died     chan error
	stopped  chan struct{}
	stop     sync.Once
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// killed marks an exit the stack caused on purpose (Kill), not reported through Died.
	killed atomic.Bool
}

// program is how to start one program again (Restart): its binary, its environment with the
// addresses it bound on its first start, the listeners to wait for and its readiness URL.
type program struct {
	name     string
	path     string
	env      map[string]string
	addrVars map[string]string // listener name -> the variable holding its address
	want     []string          // listener names, in the order spawn waits for them
	readyURL string
}

// Start builds the programs (unless Options.Programs holds them), starts everything and waits until all of it is ready. On error
// everything already started is stopped again. Before anything, it checks that the addresses
// given are free (checkAddrs).
func Start(ctx context.Context, opts Options) (st *Stack, err error) {
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	opts.Output = &lockedWriter{w: opts.Output}
	bin := opts.Programs
	if bin == "" {
		bin = filepath.Join(opts.DataDir, binDir)
	}
	if err := checkAddrs(chosenAddrs(opts), bin); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	s := newStack(opts.Output)
	s.AdminToken = opts.AdminToken
	s.DatabasePrefix = opts.DatabasePrefix
	if s.AdminToken == "" {
		s.AdminToken = "admin_" + randomHex(24)
	}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	if opts.Programs == "" {
		if err := Build(ctx, opts.RepoRoot, bin, opts.Output); err != nil {
			return nil, err
		}
	}

	s.MongoURI = opts.MongoURI
	if s.MongoURI == "" {
		dir := filepath.Join(opts.DataDir, mongoDir)
		s.mongo, err = mongostore.Start(ctx, mongostore.Options{Dir: dir})
		if err != nil {
			return nil, fmt.Errorf("embedded MongoDB-compatible store: %w", err)
		}
		s.MongoURI = s.mongo.URI()
		s.Embedded = append(s.Embedded, "MongoDB: embedded FerretDB v1.24 (SQLite in "+dir+")")
	}
	s.RedisURL = opts.RedisURL
	if s.RedisURL == "" {
		if err := s.startRedis(filepath.Join(opts.DataDir, redisSnapshot)); err != nil {
			return nil, err
		}
	}

	shared := map[string]string{
		"MONGODB_URI":          s.MongoURI,
		"REDIS_URL":            s.RedisURL,
		"INTERNAL_AUTH_SECRET": s.InternalAuthSecret,
	}
	gatewayEnv := map[string]string{
		"GATEWAY_ADDR":     opts.GatewayAddr,
		"ADMIN_ADDR":       opts.AdminAddr,
		"ADMIN_TOKEN":      s.AdminToken,
		"MONGODB_DATABASE": opts.DatabasePrefix + "gateway",
	}
	for _, svc := range services {
		addr := opts.ServiceAddrs[svc.Name]
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		own := map[string]string{"HTTP_ADDR": addr, "MONGODB_DATABASE": opts.DatabasePrefix + svc.Database}
		prog := &program{
			name: svc.Name, path: filepath.Join(bin, svc.Name),
			env:      programEnv(opts, svc.Name, svc.Settings, shared, own),
			addrVars: map[string]string{"http": "HTTP_ADDR", "metrics": "METRICS_ADDR"}, want: []string{"http", "metrics"},
		}
		addrs, err := s.startProgram(ctx, prog)
		if err != nil {
			return nil, err
		}
		s.ServiceURLs[svc.Name] = "http://" + addrs["http"]
		s.MetricsURLs[svc.Name] = "http://" + addrs["metrics"] + "/metrics"
		prog.readyURL = s.ServiceURLs[svc.Name] + "/readyz"
		gatewayEnv[gatewayUpstreamVar[svc.Name]] = s.ServiceURLs[svc.Name]
	}
	gw := &program{
		name: "gateway", path: filepath.Join(bin, "gateway"),
		env:      programEnv(opts, "gateway", gatewaySettings, shared, gatewayEnv),
		addrVars: map[string]string{"public": "GATEWAY_ADDR", "admin": "ADMIN_ADDR", "metrics": "METRICS_ADDR"},
		want:     []string{"public", "admin", "metrics"},
	}
	addrs, err := s.startProgram(ctx, gw)
	if err != nil {
		return nil, err
	}
	s.MetricsURLs["gateway"] = "http://" + addrs["metrics"] + "/metrics"
	s.GatewayURL = "http://" + addrs["public"]
	s.AdminURL = "http://" + addrs["admin"]
	gw.readyURL = s.GatewayURL + "/readyz"

	for name, u := range s.ServiceURLs {
		if err := waitReady(ctx, name, u+"/readyz"); err != nil {
			return nil, err
		}
	}
	if err := waitReady(ctx, "gateway", s.GatewayURL+"/readyz"); err != nil {
		return nil, err
	}
	if s.DevAPIKey, err = s.devKey(ctx, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// newStack is a stack with nothing started yet.
func newStack(out io.Writer) *Stack {
	return &Stack{
		InternalAuthSecret: randomHex(32),
		ServiceURLs:        map[string]string{},
		MetricsURLs:        map[string]string{},
		out:                out,
		programs:           map[string]*program{},
		died:               make(chan error, len(services)+1),
		stopped:            make(chan struct{}),
		starter:            newStarter(),
	}
}

// chosenAddrs are the addresses Start must find free: the gateway's two, and those of the
// services given one.
func chosenAddrs(opts Options) []namedAddr {
	addrs := []namedAddr{{"GATEWAY_ADDR", opts.GatewayAddr}, {"ADMIN_ADDR", opts.AdminAddr}}
	for _, svc := range services {
		if a := opts.ServiceAddrs[svc.Name]; a != "" {
			addrs = append(addrs, namedAddr{svc.AddrVar, a})
		}
	}
	return addrs
}

// startRedis starts the embedded Redis with what the last clean stop kept in file (Stop
// keeps it there again).
func (s *Stack) startRedis(file string) error {
	var err error
	if s.redis, err = redisstore.Start(redisstore.Options{}); err != nil {
		return fmt.Errorf("embedded Redis: %w", err)
	}
	s.RedisURL = s.redis.URL()
	n, err := s.redis.Restore(file)
	if err != nil {
		// Not started empty: the next clean stop would overwrite the file with nothing.
		return fmt.Errorf("embedded Redis: %w (move the file away to start without what it kept)", err)
	}
	s.keepFile = file // only now: Stop must not overwrite a file that was not read
	s.Embedded = append(s.Embedded, fmt.Sprintf("Redis: embedded miniredis, in memory; a clean stop keeps its idempotency "+
		"records and queued tasks in %s (%d keys restored from it now)", file, n))
	return nil
}

// Build compiles the five programs of the repository at root into bin with one go build,
// which compiles shared packages once (Options.Programs).
func Build(ctx context.Context, root, bin string, out io.Writer) error {
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	for _, svc := range services {
		args = append(args, "./"+svc.Name)
	}
	args = append(args, "./gateway")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, stderr.String())
	}
	return nil
}

// startProgram starts a program for the first time and keeps what Restart needs: its
// environment with the addresses it actually bound (a free port when Ephemeral), so that a
// restarted program listens where the gateway already points.
func (s *Stack) startProgram(ctx context.Context, prog *program) (map[string]string, error) {
	addrs, err := s.spawn(ctx, prog.path, prog.name, prog.env, s.out, prog.want...)
	if err != nil {
		return nil, err
	}
	for listener, v := range prog.addrVars {
		prog.env[v] = addrs[listener]
	}
	s.programs[prog.name] = prog
	return addrs, nil
}

// spawn starts a program and waits for the "listening" log lines of the listeners named in
// want, returning their addresses. Every output line goes to out prefixed with the name. The
// new process replaces any earlier one of the same name in s.procs (Restart).
func (s *Stack) spawn(ctx context.Context, path, name string, env map[string]string, out io.Writer, want ...string) (map[string]string, error) {
	cmd := exec.Command(path)
	cmd.Env = environ(env)
	cmd.SysProcAttr = procAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &prefixWriter{prefix: "[" + name + "] ", w: out}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	// Started under the lock so that Stop, which takes its list of processes under the same
	// lock, either sees this one or has already made starting impossible.
	s.mu.Lock()
	select {
	case <-s.stopped:
		s.mu.Unlock()
		return nil, fmt.Errorf("start %s: the stack is stopping", name)
	default:
	}
	if err := s.starter.start(cmd); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	replaced := false
	for i, old := range s.procs {
		if old.name == name {
			s.procs[i] = p
			replaced = true
		}
	}
	if !replaced {
		s.procs = append(s.procs, p)
	}
	s.mu.Unlock()

	found := make(chan map[string]string, 1)
	go func() {
		addrs := map[string]string{}
		sent := false
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			fmt.Fprintf(out, "[%s] %s\n", name, line)
			if sent {
				continue
			}
			var rec struct{ Msg, Listener, Addr string }
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" {
				addrs[rec.Listener] = rec.Addr
				if hasAll(addrs, want) {
					found <- addrs
					sent = true
				}
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		if p.killed.Load() {
			return // Kill: on purpose
		}
		select {
		case <-s.stopped:
		default:
			select {
			case s.died <- fmt.Errorf("%s %s while the stack was running; its last log lines, prefixed [%s], are above",
				name, describeExit(cmd, p.err), name):
			default: // the channel is full of earlier deaths nobody read; do not leak
			}
		}
	}()

	select {
	case addrs := <-found:
		return addrs, nil
	case <-p.done:
		return nil, fmt.Errorf("%s %s during start-up; its log lines, prefixed [%s], are above", name, describeExit(cmd, p.err), name)
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("%s did not start listening within 60s", name)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func hasAll(m map[string]string, keys []string) bool {
	for _, k := range keys {
		if m[k] == "" {
			return false
		}
	}
	return true
}

func waitReady(ctx context.Context, name, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready within 60s: %s", name, last)
}

// devKey returns the test-mode key of acct_dev: the given one, else the one kept in the data
// folder, else a new one. A given or kept key is imported through the admin API, which is a
// no-op when the gateway already has it, so the key survives a database reset.
func (s *Stack) devKey(ctx context.Context, opts Options) (string, error) {
	keyFile := filepath.Join(opts.DataDir, "dev_api_key")
	key := opts.DevAPIKey
	if key == "" {
		if b, err := os.ReadFile(keyFile); err == nil {
			key = strings.TrimSpace(string(b))
		}
	}
	body := map[string]any{"account": "acct_dev", "livemode": false}
	if key != "" {
		body["secret"] = key
	}
	created, status, err := s.Admin(ctx, http.MethodPost, "/admin/api_keys", body)
	if err != nil {
		return "", fmt.Errorf("seeding the dev key: %w", err)
	}
	switch {
	case status == http.StatusCreated && key == "":
		key, _ = created["secret"].(string)
		if key == "" {
			return "", errors.New("seeding the dev key: the admin API returned no secret")
		}
	case status == http.StatusCreated, status == http.StatusConflict:
		// imported now, or already there
	default:
		return "", fmt.Errorf("seeding the dev key: admin API answered %d: %v", status, created)
	}
	if opts.DevAPIKey == "" {
		if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("keeping the dev key: %w", err)
		}
	}
	return key, nil
}

// Admin calls the gateway's admin API with the stack's admin token.
func (s *Stack) Admin(ctx context.Context, method, path string, body any) (map[string]any, int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, 0, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.AdminURL+path, r)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	out := map[string]any{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, resp.StatusCode, fmt.Errorf("admin API %s %s: %d with an undecodable body: %w", method, path, resp.StatusCode, err)
	}
	return out, resp.StatusCode, nil
}

// describeExit says how a program that was not asked to stop ended, from the state Wait left:
// an exit status (0 included: a program stops cleanly on a SIGTERM or SIGINT sent to it alone)
// or the signal that killed it.
func describeExit(cmd *exec.Cmd, waitErr error) string {
	st := cmd.ProcessState
	if st == nil {
		return fmt.Sprintf("could not be waited for (%v)", waitErr)
	}
	pid := st.Pid()
	switch ws, _ := st.Sys().(syscall.WaitStatus); {
	case st.Exited() && st.ExitCode() == 0:
		return fmt.Sprintf("(pid %d) exited with status 0, as on a SIGTERM or SIGINT, without the launcher asking it to", pid)
	case st.Exited():
		return fmt.Sprintf("(pid %d) exited with status %d", pid, st.ExitCode())
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		return fmt.Sprintf("(pid %d) was killed by SIGKILL, from outside the launcher (kill -9, or the kernel's out-of-memory killer)", pid)
	case ws.Signaled():
		return fmt.Sprintf("(pid %d) was killed by signal %d (%v)", pid, ws.Signal(), ws.Signal())
	default:
		return fmt.Sprintf("(pid %d) ended: %v", pid, st)
	}
}

// Died delivers an error when a program exits while the stack is running.
func (s *Stack) Died() <-chan error { return s.died }

// Program is one running program of the stack.
type Program struct {
	Name       string
	PID        int
	URL        string // where it listens (the gateway: its public API)
	MetricsURL string // its Prometheus scrape endpoint
}

// Programs lists the programs in start order (the services, then the gateway).
func (s *Stack) Programs() []Program {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Program, 0, len(s.procs))
	for _, p := range s.procs {
		u := s.ServiceURLs[p.name]
		if p.name == "gateway" {
			u = s.GatewayURL
		}
		out = append(out, Program{Name: p.name, PID: p.cmd.Process.Pid, URL: u, MetricsURL: s.MetricsURLs[p.name]})
	}
	return out
}

// Stop stops the gateway first (no new requests), then the services, each with SIGTERM and a
// grace period, then the embedded stores: Redis after keeping what it keeps (keptRedis) in the
// data folder, now that no program writes to it.
func (s *Stack) Stop() error {
	var errs []error
	s.stop.Do(func() {
		s.mu.Lock()
		close(s.stopped)
		procs := append([]*proc(nil), s.procs...)
		s.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			p := procs[i]
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
				errs = append(errs, fmt.Errorf("%s did not stop within 15s and was killed", p.name))
			}
		}
		s.starter.close() // every program has exited
		if s.redis != nil {
			if s.keepFile != "" {
				if _, err := s.redis.Save(s.keepFile, keptRedis...); err != nil {
					errs = append(errs, fmt.Errorf("embedded Redis: %w", err))
				}
			}
			s.redis.Close()
		}
		if s.mongo != nil {
			if err := s.mongo.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// Kill stops one program with SIGKILL, as a crash would (fault tests). The exit is not
// reported through Died; Restart starts the program again.
func (s *Stack) Kill(name string) error {
	p := s.proc(name)
	if p == nil {
		return fmt.Errorf("no program %s", name)
	}
	p.killed.Store(true)
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Restart starts a program again after Kill, with the environment and listen addresses of its
// first start (so the gateway's upstream URL stays valid), and waits until it is ready.
func (s *Stack) Restart(ctx context.Context, name string) error {
	return s.RestartEnv(ctx, name, nil)
}

// RestartEnv is Restart with some variables changed for this start only (an empty value
// removes one); a later Restart goes back to the program's own environment. Fault tests use it
// to start a program with a guard lifted or set, say.
func (s *Stack) RestartEnv(ctx context.Context, name string, env map[string]string) error {
	prog := s.programs[name]
	p := s.proc(name)
	if prog == nil || p == nil {
		return fmt.Errorf("no program %s", name)
	}
	select {
	case <-p.done:
	default:
		if !p.killed.Load() {
			return fmt.Errorf("restart %s: it is running; Kill it first", name)
		}
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			return fmt.Errorf("restart %s: the killed process has not exited after 15s", name)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	addrs, err := s.spawn(ctx, prog.path, prog.name, merge(prog.env, env), s.out, prog.want...)
	if err != nil {
		return err
	}
	for listener, v := range prog.addrVars {
		if addrs[listener] != prog.env[v] && env[v] == "" {
			return fmt.Errorf("restart %s: %s listens on %s, not on %s as before", name, listener, addrs[listener], prog.env[v])
		}
	}
	return waitReady(ctx, name, prog.readyURL)
}

// StartReplica starts one more process of a service, named "<name>#<n>" (n from 2), with the
// service's environment but listeners of its own on free ports, and waits until it is ready.
// It shares the service's store and queues, so it takes a share of the queued work; the
// gateway keeps sending requests to the first. Kill and Restart take its name. Drills of
// several replicas use it.
func (s *Stack) StartReplica(ctx context.Context, name string) (string, error) {
	prog := s.programs[name]
	if prog == nil || prog.readyURL == "" || prog.addrVars["http"] == "" {
		return "", fmt.Errorf("no service %s", name)
	}
	n := 2
	for s.programs[fmt.Sprintf("%s#%d", name, n)] != nil {
		n++
	}
	replica := &program{
		name: fmt.Sprintf("%s#%d", name, n), path: prog.path,
		env:      merge(prog.env, map[string]string{"HTTP_ADDR": "127.0.0.1:0", "METRICS_ADDR": "127.0.0.1:0"}),
		addrVars: prog.addrVars, want: prog.want,
	}
	addrs, err := s.startProgram(ctx, replica)
	if err != nil {
		return "", err
	}
	replica.readyURL = "http://" + addrs["http"] + "/readyz"
	return replica.name, waitReady(ctx, replica.name, replica.readyURL)
}

// proc returns the latest process of a program, or nil.
func (s *Stack) proc(name string) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

func merge(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// programEnv is the whole environment of one program, later sources winning: what the stack
// gives every program (shared), the variables of Options.Environ the program documents
// (settings and everyProgram), Options.Env, what the stack sets for this program (own), and
// Options.ProgramEnv.
func programEnv(opts Options, name string, settings []string, shared, own map[string]string) map[string]string {
	env := merge(shared, documented(opts.Environ, everyProgram, settings))
	for _, m := range []map[string]string{opts.Env, own, opts.ProgramEnv[name]} {
		env = merge(env, m)
	}
	return env
}

// documented picks from environ the variables matching a pattern (a prefix ending in "_", or a
// whole name) that the stack does not set itself. As with os.Getenv, the first of duplicates
// counts.
func documented(environ []string, patterns ...[]string) map[string]string {
	all := slices.Concat(patterns...)
	out := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if _, seen := out[k]; !ok || seen || setByStack(k) {
			continue
		}
		for _, p := range all {
			if k == p || (strings.HasSuffix(p, "_") && strings.HasPrefix(k, p)) {
				out[k] = v
				break
			}
		}
	}
	return out
}

func setByStack(name string) bool {
	if slices.Contains(stackSet, name) {
		return true
	}
	for _, v := range gatewayUpstreamVar {
		if v == name {
			return true
		}
	}
	return false
}

// environ gives a program exactly the variables it is configured with, so a stray variable in
// the developer's shell cannot change how a service behaves: what reaches it from there is what
// it documents (Options.Environ).
func environ(env map[string]string) []string {
	var out []string
	for k, v := range env {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// prefixWriter prefixes each line written to it.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     sync.Mutex
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// lockedWriter serialises writes from the programs' log pumps.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
