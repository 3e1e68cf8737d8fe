package compose

// TestCompose is `make compose-test` (deploy/compose/test.sh starts the engine, builds the
// images and runs it): compose.yaml with compose.ci.yaml, run for real on this machine's
// Docker engine, every container on the host's network and 127.0.0.1.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/embedded/testkit"
)

// programs are the platform's five programs, each an image of `make images`.
var programs = []string{"verification-svc", "collections-svc", "payments-svc", "webhooks-svc", "gateway"}

// helpers are the images of `make images` that only Compose uses.
var helpers = []string{"ferretdb", "asynqmon", "devkey"}

// notPullable are the services of compose.yaml whose images cannot be pulled here: the CI
// override puts them in an inactive profile (mongo and redis are replaced instead of left out:
// FerretDB's image from `make images`, the machine's Redis).
var notPullable = []string{"redis", "otel-collector", "jaeger"}

func TestCompose(t *testing.T) {
	if os.Getenv("RENTAL_COMPOSE_TEST") == "" {
		t.Skip("run by `make compose-test`: it needs a Docker engine, the images of `make images` and bin/docker-compose")
	}
	start := time.Now()
	s := newStack(t)
	s.checkUsersFile()
	s.checkImages()
	s.checkLeftOut()

	s.up()
	t.Logf("up and healthy in %s", time.Since(start).Round(time.Second))

	key := s.walkthrough()
	s.metrics()
	s.killedAndRestarted(key)
	s.down()
	t.Logf("compose-test took %s", time.Since(start).Round(time.Second))
}

// stack is one Compose project of the test.
type stack struct {
	t       *testing.T
	compose string // the Compose binary
	dir     string // deploy/compose
	project string
	env     []string
	vars    map[string]string // what compose.ci.yaml reads
	dataDir string            // devkey's .data
	isDown  bool
	rcv     *receiver.Receiver // the walkthrough's webhook receiver

	gateway, admin, asynqmon string // base URLs
	adminToken               string
	versions                 map[string]string // program -> its image's version label
}

func newStack(t *testing.T) *stack {
	bin := os.Getenv("COMPOSE")
	if bin == "" {
		t.Fatal("COMPOSE must name the Compose binary (make compose-test sets it to bin/docker-compose)")
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{
		t: t, compose: bin, dir: dir,
		project:    "rentalci" + randomHex(4),
		dataDir:    t.TempDir(),
		adminToken: "admin_" + randomHex(16),
	}
	port := func() string { return strconv.Itoa(freePort(t)) }
	s.vars = map[string]string{
		"RENTAL_CI_MONGO_PORT":        port(),
		"RENTAL_CI_VERIFICATION_PORT": port(),
		"RENTAL_CI_COLLECTIONS_PORT":  port(),
		"RENTAL_CI_PAYMENTS_PORT":     port(),
		"RENTAL_CI_WEBHOOKS_PORT":     port(),
		"RENTAL_CI_GATEWAY_PORT":      port(),
		"RENTAL_CI_ADMIN_PORT":        port(),
		"RENTAL_CI_ASYNQMON_PORT":     port(),
		// Each program's METRICS_ADDR: on the host's network, compose.yaml's :9091 … would
		// listen on every interface of the machine and collide with anything else there.
		"RENTAL_CI_VERIFICATION_METRICS_PORT": port(),
		"RENTAL_CI_COLLECTIONS_METRICS_PORT":  port(),
		"RENTAL_CI_PAYMENTS_METRICS_PORT":     port(),
		"RENTAL_CI_WEBHOOKS_METRICS_PORT":     port(),
		"RENTAL_CI_GATEWAY_METRICS_PORT":      port(),
		"RENTAL_CI_ADMIN_TOKEN":               s.adminToken,
		"RENTAL_CI_INTERNAL_AUTH_SECRET":      randomHex(32),
		"RENTAL_CI_DATA_DIR":                  s.dataDir,
		// A database of the machine's Redis claimed for this test (REDIS_URL, as CI sets it),
		// else a miniredis in this process: on the host's network the containers reach
		// either on 127.0.0.1.
		"RENTAL_CI_REDIS_URL": testkit.Redis(t),
	}
	s.gateway = "http://127.0.0.1:" + s.vars["RENTAL_CI_GATEWAY_PORT"]
	s.admin = "http://127.0.0.1:" + s.vars["RENTAL_CI_ADMIN_PORT"]
	s.asynqmon = "http://127.0.0.1:" + s.vars["RENTAL_CI_ASYNQMON_PORT"]
	s.env = os.Environ()
	for k, v := range s.vars {
		s.env = append(s.env, k+"="+v)
	}
	t.Cleanup(s.cleanup)
	return s
}

// run runs Compose on both files within timeout and returns its combined output.
func (s *stack) run(timeout time.Duration, args ...string) (string, error) {
	return s.runFiles(timeout, []string{"compose.yaml", "compose.ci.yaml"}, args...)
}

func (s *stack) runFiles(timeout time.Duration, files []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := []string{"--project-name", s.project, "--project-directory", s.dir}
	for _, f := range files {
		full = append(full, "-f", filepath.Join(s.dir, f))
	}
	cmd := exec.CommandContext(ctx, s.compose, append(full, args...)...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("compose %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (s *stack) must(timeout time.Duration, args ...string) string {
	s.t.Helper()
	out, err := s.run(timeout, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// service is what the test reads of `compose config --format json`.
type service struct {
	Image       string            `json:"image"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	NetworkMode string            `json:"network_mode"`
	User        string            `json:"user"`
	ReadOnly    bool              `json:"read_only"`
	PullPolicy  string            `json:"pull_policy"`
	Ports       []struct {
		HostIP    string `json:"host_ip"`
		Published string `json:"published"`
	} `json:"ports"`
	Healthcheck *struct {
		Test    []string `json:"test"`
		Disable bool     `json:"disable"`
	} `json:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Volumes []struct {
		Type, Source, Target string
	} `json:"volumes"`
}

func (s *stack) config(files ...string) map[string]service {
	s.t.Helper()
	out, err := s.runFiles(time.Minute, files, "config", "--format", "json")
	if err != nil {
		s.t.Fatal(err)
	}
	var cfg struct{ Services map[string]service }
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		s.t.Fatalf("compose config: %v\n%s", err, out)
	}
	return cfg.Services
}

// checkUsersFile checks compose.yaml itself, as `docker compose up` reads it on a machine that
// can pull its images (this one cannot: only its shape is checked here).
func (s *stack) checkUsersFile() {
	t := s.t
	svcs := s.config("compose.yaml")
	for _, name := range slices.Concat(programs, []string{"mongo", "redis", "otel-collector", "jaeger", "asynqmon", "devkey"}) {
		if _, ok := svcs[name]; !ok {
			t.Errorf("compose.yaml has no service %s", name)
		}
	}
	if cmd := strings.Join(svcs["mongo"].Command, " "); !strings.Contains(cmd, "--replSet rs0") {
		t.Errorf("mongo is not a replica set: command %q", cmd)
	}
	if cmd := strings.Join(svcs["redis"].Command, " "); !strings.Contains(cmd, "--appendonly yes") {
		t.Errorf("redis keeps no append-only file: command %q", cmd)
	}
	if ro := svcs["asynqmon"].Environment["ASYNQMON_READ_ONLY"]; ro != "true" {
		t.Errorf("asynqmon is not read-only by default: ASYNQMON_READ_ONLY=%q", ro)
	}
	for name, svc := range svcs {
		for _, p := range svc.Ports {
			if p.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes port %s on %q, not on loopback alone", name, p.Published, p.HostIP)
			}
		}
	}
	for _, name := range slices.Concat(programs, []string{"asynqmon"}) {
		svc := svcs[name]
		if want := "rentalplatform/" + name + ":dev"; svc.Image != want {
			t.Errorf("%s runs %s, want the image of make images, %s", name, svc.Image, want)
		}
		if svc.PullPolicy != "never" || !svc.ReadOnly {
			t.Errorf("%s: pull_policy %q, read_only %v; want never, true", name, svc.PullPolicy, svc.ReadOnly)
		}
		if svc.Healthcheck == nil || len(svc.Healthcheck.Test) < 2 || svc.Healthcheck.Test[1] != "/program" {
			t.Errorf("%s has no healthcheck through its program: %+v", name, svc.Healthcheck)
		}
	}
	for _, name := range programs[:4] {
		for _, dep := range []string{"mongo", "redis"} {
			if svcs[name].DependsOn[dep].Condition != "service_healthy" {
				t.Errorf("%s does not wait for %s to be healthy", name, dep)
			}
		}
		if got := svcs["gateway"].DependsOn[name].Condition; got != "service_healthy" {
			t.Errorf("the gateway does not wait for %s to be healthy (%q)", name, got)
		}
	}
}

// checkImages: the images of `make images` are there, non-root, with a healthcheck.
func (s *stack) checkImages() {
	for _, name := range slices.Concat(programs, helpers) {
		ref := "rentalplatform/" + name + ":dev"
		out := docker(s.t, "image", "inspect", "--format",
			`{{.Config.User}}|{{json .Config.Healthcheck.Test}}|{{.Size}}|{{index .Config.Labels "org.opencontainers.image.version"}}`, ref)
		parts := strings.SplitN(out, "|", 4)
		if len(parts) != 4 {
			s.t.Fatalf("docker image inspect %s: %q", ref, out)
		}
		if s.versions == nil {
			s.versions = map[string]string{}
		}
		s.versions[name] = parts[3]
		if parts[0] != "65532:65532" {
			s.t.Errorf("%s runs as %q, not as 65532:65532", ref, parts[0])
		}
		if parts[1] != `["CMD","/program","-healthcheck"]` {
			s.t.Errorf("%s: healthcheck %s", ref, parts[1])
		}
		size, _ := strconv.ParseFloat(parts[2], 64)
		s.t.Logf("image %-38s %5.1f MB", ref, size/1e6)
	}
}

// checkLeftOut: what the CI override leaves out, said out loud.
func (s *stack) checkLeftOut() {
	out := s.must(time.Minute, "config", "--services")
	active := strings.Fields(out)
	for _, name := range notPullable {
		if slices.Contains(active, name) {
			s.t.Errorf("compose.ci.yaml still runs %s, whose image cannot be pulled here", name)
		}
	}
	fmt.Printf("compose-test: SKIPPED services redis, otel-collector, jaeger: their images cannot be pulled on this machine "+
		"(redis is the machine's Redis or a miniredis instead, %s; no traces are exported)\n", redact(s.vars["RENTAL_CI_REDIS_URL"]))
	fmt.Printf("compose-test: mongo is FerretDB v1.24 (rentalplatform/ferretdb), running: %s\n", strings.Join(active, " "))
	svcs := s.config("compose.yaml", "compose.ci.yaml")
	for _, name := range active {
		if svcs[name].NetworkMode != "host" {
			s.t.Errorf("%s is not on the host's network (network_mode %q)", name, svcs[name].NetworkMode)
		}
	}
}

func (s *stack) up() {
	t := s.t
	// --wait: every service running and healthy (devkey: exited 0), within the timeout.
	if out, err := s.run(6*time.Minute, "up", "--detach", "--wait", "--wait-timeout", "300"); err != nil {
		t.Fatalf("up: %v\n%s", err, s.diagnose())
	} else {
		t.Logf("up:\n%s", lastLines(out, 12))
	}
	for _, u := range []string{s.gateway + "/readyz", s.asynqmon + "/healthz"} {
		if code, body := get(t, u, ""); code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, code, body)
		}
	}
	ps := s.must(time.Minute, "ps", "--all", "--format", "{{.Service}} {{.State}} {{.Health}} {{.ExitCode}}")
	t.Logf("ps:\n%s", ps)
}

// walkthrough is the README's, against the Compose platform: the dev key devkey kept, a key
// from the admin API, the README's own commands, a webhook endpoint and an event delivered to
// a TLS receiver on 127.0.0.1. It returns the key it made.
func (s *stack) walkthrough() string {
	t := s.t
	// devkey kept what `make run` keeps, where `make run` keeps it.
	token := strings.TrimSpace(readFile(t, filepath.Join(s.dataDir, "admin_token")))
	if token != s.adminToken {
		t.Fatalf("devkey kept admin token %q, the gateway has %q", token, s.adminToken)
	}
	devKey := strings.TrimSpace(readFile(t, filepath.Join(s.dataDir, "dev_api_key")))
	if !regexp.MustCompile(`^sk_test_[A-Za-z0-9]{43}$`).MatchString(devKey) {
		t.Fatalf("devkey kept %q, not a test-mode secret key", devKey)
	}
	if code, body := get(t, s.gateway+"/v1/webhook_endpoints?limit=1", devKey); code != http.StatusOK {
		t.Fatalf("the dev key: %d %s", code, body)
	}

	// As `make run` obtains its first key: the admin API with the admin token.
	created := s.call(http.MethodPost, s.admin+"/admin/api_keys", s.adminToken, `{"account":"acct_compose","livemode":false}`, http.StatusCreated)
	key, _ := created["secret"].(string)
	if !strings.HasPrefix(key, "sk_test_") {
		t.Fatalf("admin API created %v", created)
	}

	s.readme()

	rcv := receiver.New(t)
	ep := s.call(http.MethodPost, s.gateway+"/v1/webhook_endpoints", key,
		fmt.Sprintf(`{"url":%q,"enabled_events":["*"],"description":"compose-test"}`, rcv.URL()+"/hooks"), http.StatusOK)
	secret, _ := ep["secret"].(string)
	verifier, err := receiver.NewVerifier(secret)
	if err != nil {
		t.Fatalf("endpoint %v: %v", ep, err)
	}
	vs := s.createSession(key)
	got := s.awaitEvent(rcv, vs, 60*time.Second)
	if err := verifier.Verify(got.Header, got.Body); err != nil {
		t.Fatalf("the delivery of %s is not signed with the endpoint's secret: %v", got.ID(), err)
	}
	t.Logf("walkthrough: key, endpoint %s, event %s (%s) delivered and verified", ep["id"], got.ID(), got.Event().Type)
	s.rcv = rcv
	return key
}

// metrics scrapes every program's metrics listener after the walkthrough's traffic: its
// resource says it runs in Compose (DEPLOYMENT_ENVIRONMENT of compose.yaml), the gateway
// counted the API requests and webhooks-svc the delivery it made.
func (s *stack) metrics() {
	t := s.t
	for _, p := range programs {
		port := s.vars["RENTAL_CI_"+strings.ToUpper(strings.TrimSuffix(p, "-svc"))+"_METRICS_PORT"]
		u := "http://127.0.0.1:" + port + "/metrics"
		code, body := get(t, u, "")
		if code != http.StatusOK {
			t.Errorf("GET %s (%s): %d %s", u, p, code, lastLines(body, 5))
			continue
		}
		want := []string{`target_info\{[^}]*deployment_environment_name="compose"`, `target_info\{[^}]*service_name="` + regexp.QuoteMeta(p) + `"`,
			// The build stamps the image's version into the binary (libs/telemetry.Version).
			`target_info\{[^}]*service_version="` + regexp.QuoteMeta(s.versions[p]) + `"`}
		if s.versions[p] == "" {
			t.Errorf("%s: its image has no version label", p)
		}
		switch p {
		case "gateway":
			want = append(want, `(?m)^http_server_request_duration_seconds_count\{[^}]*service_name="gateway"[^}]*\} [1-9]`)
		case "webhooks-svc":
			want = append(want, `(?m)^webhooks_delivery_attempts_total\{[^}]*result="succeeded"[^}]*\} [1-9]`)
		}
		for _, w := range want {
			if !regexp.MustCompile(w).MatchString(body) {
				t.Errorf("%s: the scrape of %s matches no %s", p, u, w)
			}
		}
	}
	t.Logf("metrics: every program's /metrics answers, deployment_environment_name=compose, service_version of its image")
}

// readme runs the README's walkthrough, as written, against this platform: only the two
// addresses and the data folder differ from `make run`'s.
func (s *stack) readme() {
	t := s.t
	readme := readFile(t, filepath.Join(s.dir, "..", "..", "README.md"))
	m := regexp.MustCompile("(?s)## Walkthrough\n.*?```sh\n(.*?)```").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no sh block under ## Walkthrough")
	}
	script := strings.NewReplacer(
		"http://127.0.0.1:8080", s.gateway,
		"http://127.0.0.1:8081", s.admin,
		".data/", s.dataDir+"/",
	).Replace(m[1])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README walkthrough failed: %v\n%s", err, out)
	}
	// What the README says each step shows.
	for _, want := range []string{
		`"object":"webhook_endpoint"`, `"status":"disabled"`, `"deleted":true`,
		`"code":"url_not_https"`, `"account":"acct_landlord1"`, `"livemode":true`,
		"idempotent-replayed: true", `"code":"permission_denied"`, "ratelimit-remaining",
	} {
		// Header names as curl prints them (Go's canonical form), compared without case.
		if !strings.Contains(strings.ToLower(string(out)), strings.ToLower(want)) {
			t.Fatalf("the README walkthrough's output has no %s:\n%s", want, out)
		}
	}
	t.Logf("README walkthrough: every step answered as the README says")
}

// createSession makes verification-svc raise an event (verification_session.created).
func (s *stack) createSession(key string) string {
	vs := s.call(http.MethodPost, s.gateway+"/v1/verification_sessions", key,
		`{"applicant":{"first_name":"Jane","last_name":"Doe","email":"jane@example.com"},"products":["identity"]}`, http.StatusOK)
	id, _ := vs["id"].(string)
	if !strings.HasPrefix(id, "vs_") {
		s.t.Fatalf("verification session: %v", vs)
	}
	return id
}

// awaitEvent waits for the delivery of the event about object.
func (s *stack) awaitEvent(rcv *receiver.Receiver, object string, timeout time.Duration) receiver.Request {
	s.t.Helper()
	var found receiver.Request
	rcv.WaitUntil(s.t, "/hooks", timeout, "the event of "+object, func(reqs []receiver.Request) bool {
		for _, r := range reqs {
			if r.Event().ObjectID() == object && r.Succeeded() {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

// killedAndRestarted kills two containers as a crash would and checks nothing is lost:
//   - webhooks-svc, the queue's consumer: an event raised while it is down waits in Redis and
//     is delivered once it is started again;
//   - mongo, the store: its process is killed from outside, Docker's restart policy starts it
//     again, and every key, endpoint and event written before is there.
func (s *stack) killedAndRestarted(key string) {
	t := s.t
	s.must(time.Minute, "kill", "--signal", "SIGKILL", "webhooks-svc")
	vs := s.createSession(key) // verification-svc publishes; nobody consumes yet
	time.Sleep(2 * time.Second)
	if s.rcv.Count("/hooks") > 0 {
		for _, r := range s.rcv.Requests("/hooks") {
			if r.Event().ObjectID() == vs {
				t.Fatalf("the event of %s was delivered while webhooks-svc was killed", vs)
			}
		}
	}
	s.must(3*time.Minute, "up", "--detach", "--wait", "--wait-timeout", "120", "webhooks-svc")
	s.awaitEvent(s.rcv, vs, 60*time.Second)
	t.Logf("webhooks-svc killed (SIGKILL) and started again: the event raised meanwhile was delivered")

	before := s.call(http.MethodGet, s.gateway+"/v1/events?limit=100", key, "", http.StatusOK)
	eps := s.call(http.MethodGet, s.gateway+"/v1/webhook_endpoints?limit=100", key, "", http.StatusOK)
	id := strings.TrimSpace(s.must(time.Minute, "ps", "--quiet", "mongo"))
	pid := docker(t, "inspect", "--format", "{{.State.Pid}}", id)
	restarts := docker(t, "inspect", "--format", "{{.RestartCount}}", id)
	if out, err := exec.Command("kill", "-KILL", pid).CombinedOutput(); err != nil {
		t.Fatalf("kill -KILL %s (mongo): %v %s", pid, err, out)
	}
	// Docker's restart policy (unless-stopped) starts it again; then the services find it.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := docker(t, "inspect", "--format", "{{.RestartCount}} {{.State.Health.Status}}", id)
		if f := strings.Fields(st); len(f) == 2 && f[0] != restarts && f[1] == "healthy" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mongo was not restarted and healthy within 2m (restarts, health: %s)\n%s", st, s.diagnose())
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitOK(t, s.gateway+"/readyz", time.Minute)
	after := s.call(http.MethodGet, s.gateway+"/v1/events?limit=100", key, "", http.StatusOK)
	if ids(after) != ids(before) {
		t.Fatalf("events before the kill of mongo:\n%s\nafter:\n%s", ids(before), ids(after))
	}
	if got := ids(s.call(http.MethodGet, s.gateway+"/v1/webhook_endpoints?limit=100", key, "", http.StatusOK)); got != ids(eps) {
		t.Fatalf("endpoints before the kill of mongo: %s, after: %s", ids(eps), got)
	}
	// And it takes writes again: a new event reaches the receiver.
	s.awaitEvent(s.rcv, s.createSession(key), 60*time.Second)
	t.Logf("mongo killed (SIGKILL of its process) and restarted by Docker: %d events and every endpoint kept, writes resumed",
		len(after["data"].([]any)))
}

// down stops everything and removes the volumes, then checks nothing of the project is left.
func (s *stack) down() {
	t := s.t
	s.must(3*time.Minute, "down", "--volumes", "--remove-orphans", "--timeout", "20")
	s.isDown = true
	label := "label=com.docker.compose.project=" + s.project
	if left := docker(t, "ps", "--all", "--quiet", "--filter", label); left != "" {
		t.Errorf("containers left after down: %s", left)
	}
	if left := docker(t, "volume", "ls", "--quiet", "--filter", label); left != "" {
		t.Errorf("volumes left after down --volumes: %s", left)
	}
	t.Logf("down: no container and no volume of project %s left", s.project)
}

// cleanup brings the project down when the test did not get that far, after showing what
// happened.
func (s *stack) cleanup() {
	if s.isDown {
		return
	}
	if s.t.Failed() {
		s.t.Logf("diagnosis:\n%s", s.diagnose())
	}
	if out, err := s.run(3*time.Minute, "down", "--volumes", "--remove-orphans", "--timeout", "10"); err != nil {
		s.t.Errorf("down after a failure: %v\n%s", err, out)
	}
}

func (s *stack) diagnose() string {
	ps, _ := s.run(time.Minute, "ps", "--all")
	logs, _ := s.run(time.Minute, "logs", "--no-color", "--tail", "60")
	return ps + "\n" + logs
}

func (s *stack) call(method, url, key, body string, want int) map[string]any {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s (want %d)", method, url, resp.StatusCode, raw, want)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		s.t.Fatalf("%s %s: %v: %s", method, url, err, raw)
	}
	return out
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitOK(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := get(t, url, "")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %s after %s", url, code, body, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ids lists the ids of a list object, in order.
func ids(list map[string]any) string {
	var b bytes.Buffer
	data, _ := list["data"].([]any)
	for _, d := range data {
		o, _ := d.(map[string]any)
		fmt.Fprintln(&b, o["id"])
	}
	return b.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redact drops a password from a Redis URL before it is printed.
func redact(u string) string {
	return regexp.MustCompile(`//[^@/]*@`).ReplaceAllString(u, "//…@")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
