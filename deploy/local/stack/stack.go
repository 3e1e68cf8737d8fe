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
	"strings"
	"sync"
	"syscall"
	"time"

	"rentalplatform/embedded/mongostore"
	"rentalplatform/embedded/redisstore"
)

// Programs in start order: the services first, the gateway (which needs their addresses) last.
var services = []struct{ Name, Database, DefaultAddr string }{
	{"verification-svc", "verification", "127.0.0.1:8091"},
	{"collections-svc", "collections", "127.0.0.1:8092"},
	{"payments-svc", "payments", "127.0.0.1:8093"},
	{"webhooks-svc", "webhooks", "127.0.0.1:8094"},
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
	DataDir  string // embedded store files, built binaries, the dev key
	// MongoURI and RedisURL point at real servers; empty starts the embedded ones.
	MongoURI string
	RedisURL string
	// DatabasePrefix is put before every database name (tests sharing one real server).
	DatabasePrefix string
	GatewayAddr    string
	AdminAddr      string
	// Ephemeral puts every service on a free port instead of its default one (tests).
	Ephemeral  bool
	AdminToken string            // empty: a random one for this run
	DevAPIKey  string            // empty: the one kept in DataDir, or a new one
	Env        map[string]string // passed to every program (PATH, LOG_LEVEL, OTEL_*, ...)
	Output     io.Writer         // the programs' logs, each line prefixed with its name
}

// Stack is a running platform.
type Stack struct {
	GatewayURL string
	AdminURL   string
	AdminToken string
	DevAPIKey  string
	// ServiceURLs maps each service to its own (internal) address.
	ServiceURLs        map[string]string
	InternalAuthSecret string
	MongoURI           string
	RedisURL           string
	DatabasePrefix     string
	// Embedded names the parts started in-process ("MongoDB (FerretDB …)", "Redis (miniredis)").
	Embedded []string

	mongo   *mongostore.Store
	redis   *redisstore.Store
	procs   []*proc
	died    chan error
	stopped chan struct{}
	stop    sync.Once
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start builds the programs, starts everything and waits until all of it is ready. On error
// everything already started is stopped again.
func Start(ctx context.Context, opts Options) (st *Stack, err error) {
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	opts.Output = &lockedWriter{w: opts.Output}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	s := &Stack{
		AdminToken:         opts.AdminToken,
		InternalAuthSecret: randomHex(32),
		ServiceURLs:        map[string]string{},
		DatabasePrefix:     opts.DatabasePrefix,
		died:               make(chan error, len(services)+1),
		stopped:            make(chan struct{}),
	}
	if s.AdminToken == "" {
		s.AdminToken = "admin_" + randomHex(24)
	}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	bin := filepath.Join(opts.DataDir, "bin")
	if err := build(ctx, opts.RepoRoot, bin, opts.Output); err != nil {
		return nil, err
	}

	s.MongoURI = opts.MongoURI
	if s.MongoURI == "" {
		s.mongo, err = mongostore.Start(ctx, mongostore.Options{Dir: filepath.Join(opts.DataDir, "mongo")})
		if err != nil {
			return nil, fmt.Errorf("embedded MongoDB-compatible store: %w", err)
		}
		s.MongoURI = s.mongo.URI()
		s.Embedded = append(s.Embedded, "MongoDB: embedded FerretDB v1.24 (SQLite in "+filepath.Join(opts.DataDir, "mongo")+")")
	}
	s.RedisURL = opts.RedisURL
	if s.RedisURL == "" {
		s.redis, err = redisstore.Start(redisstore.Options{})
		if err != nil {
			return nil, fmt.Errorf("embedded Redis: %w", err)
		}
		s.RedisURL = s.redis.URL()
		s.Embedded = append(s.Embedded, "Redis: embedded miniredis (in memory, lost on exit)")
	}

	common := map[string]string{
		"MONGODB_URI":          s.MongoURI,
		"REDIS_URL":            s.RedisURL,
		"INTERNAL_AUTH_SECRET": s.InternalAuthSecret,
	}
	for k, v := range opts.Env {
		common[k] = v
	}
	gatewayEnv := map[string]string{
		"GATEWAY_ADDR":     opts.GatewayAddr,
		"ADMIN_ADDR":       opts.AdminAddr,
		"ADMIN_TOKEN":      s.AdminToken,
		"MONGODB_DATABASE": opts.DatabasePrefix + "gateway",
	}
	for _, svc := range services {
		addr := svc.DefaultAddr
		if opts.Ephemeral {
			addr = "127.0.0.1:0"
		}
		env := map[string]string{"HTTP_ADDR": addr, "MONGODB_DATABASE": opts.DatabasePrefix + svc.Database}
		addrs, err := s.spawn(ctx, filepath.Join(bin, svc.Name), svc.Name, merge(common, env), opts.Output, "http")
		if err != nil {
			return nil, err
		}
		s.ServiceURLs[svc.Name] = "http://" + addrs["http"]
		gatewayEnv[gatewayUpstreamVar[svc.Name]] = s.ServiceURLs[svc.Name]
	}
	addrs, err := s.spawn(ctx, filepath.Join(bin, "gateway"), "gateway", merge(common, gatewayEnv), opts.Output, "public", "admin")
	if err != nil {
		return nil, err
	}
	s.GatewayURL = "http://" + addrs["public"]
	s.AdminURL = "http://" + addrs["admin"]

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

// build compiles the five programs with one go build, which compiles shared packages once.
func build(ctx context.Context, root, bin string, out io.Writer) error {
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

// spawn starts a program and waits for the "listening" log lines of the listeners named in
// want, returning their addresses. Every output line goes to out prefixed with the name.
func (s *Stack) spawn(ctx context.Context, path, name string, env map[string]string, out io.Writer, want ...string) (map[string]string, error) {
	cmd := exec.Command(path)
	cmd.Env = environ(env)
	// Children get their own process group so a Ctrl-C in the terminal reaches only this
	// supervisor, which then stops them in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &prefixWriter{prefix: "[" + name + "] ", w: out}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	s.procs = append(s.procs, p)

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
		select {
		case <-s.stopped:
		default:
			s.died <- fmt.Errorf("%s exited unexpectedly: %v", name, p.err)
		}
	}()

	select {
	case addrs := <-found:
		return addrs, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited during start-up: %v (its log lines above say why)", name, p.err)
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

// Died delivers an error when a program exits while the stack is running.
func (s *Stack) Died() <-chan error { return s.died }

// Stop stops the gateway first (no new requests), then the services, each with SIGTERM and a
// grace period, then the embedded stores.
func (s *Stack) Stop() error {
	var errs []error
	s.stop.Do(func() {
		close(s.stopped)
		for i := len(s.procs) - 1; i >= 0; i-- {
			p := s.procs[i]
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
				errs = append(errs, fmt.Errorf("%s did not stop within 15s and was killed", p.name))
			}
		}
		if s.redis != nil {
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

// Kill stops one program with SIGKILL, as a crash would (fault tests).
func (s *Stack) Kill(name string) error {
	for _, p := range s.procs {
		if p.name == name {
			return p.cmd.Process.Kill()
		}
	}
	return fmt.Errorf("no program %s", name)
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

// environ gives a program exactly the variables it is configured with, so a stray variable in
// the developer's shell cannot change how a service behaves.
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
