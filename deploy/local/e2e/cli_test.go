package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cliRun is one run of the rental CLI: its exit status and output.
type cliRun struct {
	code           int
	stdout, stderr string
}

// buildCLI builds the rental CLI (cli/cmd/rental) as a user's go build or go install would.
func buildCLI(t *testing.T) string {
	t.Helper()
	return goBuild(t, "./cli/cmd/rental", "rental")
}

// runCLI runs the CLI with args, stdin and env (on top of PATH and HOME).
func runCLI(t *testing.T, bin, stdin string, env map[string]string, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliRun{code: code, stdout: out.String(), stderr: errOut.String()}
}

// The CLI as a user runs it against the local platform: login from standard input, then get,
// post and delete, with the key never printed and every POST idempotent.
func TestCLI(t *testing.T) {
	p := startWith(t, stackConfig{})
	t.Cleanup(func() { p.noDeaths(t) })
	key := p.newKey(t, "acct_cli", false)
	bin := buildCLI(t)
	config := filepath.Join(t.TempDir(), "rental", "config.json")
	env := map[string]string{"RENTAL_API_BASE": p.GatewayURL, "RENTAL_CONFIG_FILE": config}
	noKey := func(r cliRun) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, key) {
			t.Fatalf("the CLI printed the API key:\n%s\n%s", r.stdout, r.stderr)
		}
	}

	// login: a wrong key is refused and nothing is stored; the right one is stored 0600.
	r := runCLI(t, bin, "sk_test_wrong0000000000000000000000000\n", env, "login")
	if r.code != 1 || !strings.Contains(r.stderr, "the API refused the key") {
		t.Fatalf("login with a wrong key: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(config); !os.IsNotExist(err) {
		t.Fatalf("a refused key was stored: %v", err)
	}
	r = runCLI(t, bin, key+"\n", env, "login")
	noKey(r)
	if r.code != 0 || !strings.Contains(r.stderr, `Stored sk_test_…`+key[len(key)-4:]+` for profile "default"`) {
		t.Fatalf("login: %d %q", r.code, r.stderr)
	}
	info, err := os.Stat(config)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the profiles file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	if r := runCLI(t, bin, "", env, "login"); r.code != 2 || !strings.Contains(r.stderr, "standard input holds no API key") {
		t.Fatalf("login with nothing on standard input: %d %q", r.code, r.stderr)
	}

	// post: a body from -d parameters, typed and nested; the same Idempotency-Key replays.
	create := []string{"post", "/v1/webhook_endpoints", "-d", "url=https://example.com/cli", "-d", "enabled_events[]=payment_request.succeeded",
		"-d", "enabled_events[]=charge.failed", "-d", "description=from the CLI", "--idempotency-key", "cli-test-1"}
	r = runCLI(t, bin, "", env, create...)
	noKey(r)
	var ep map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ep) != nil || ep["id"] == nil {
		t.Fatalf("post: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if evs, _ := ep["enabled_events"].([]any); len(evs) != 2 || ep["description"] != "from the CLI" {
		t.Fatalf("the endpoint created: %v", ep)
	}
	id := ep["id"].(string)
	r = runCLI(t, bin, "", env, create...)
	var again map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &again) != nil || again["id"] != id {
		t.Fatalf("the same post with the same Idempotency-Key: %d %s; want endpoint %s again", r.code, r.stdout, id)
	}
	// Without --idempotency-key each run is a new key: a second endpoint.
	r = runCLI(t, bin, "", env, create[:len(create)-2]...)
	var other map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &other) != nil || other["id"] == id {
		t.Fatalf("a post without --idempotency-key: %d %s; want a new endpoint", r.code, r.stdout)
	}

	// get: --json prints one line; -d adds query parameters.
	r = runCLI(t, bin, "", env, "get", "/v1/webhook_endpoints/"+id, "--json")
	if r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 || !strings.Contains(r.stdout, `"id":"`+id+`"`) {
		t.Fatalf("get --json: %d %q", r.code, r.stdout)
	}
	r = runCLI(t, bin, "", env, "get", "/v1/webhook_endpoints", "-d", "limit=1")
	var page struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &page) != nil || len(page.Data) != 1 || !page.HasMore {
		t.Fatalf("get with -d limit=1: %d %s", r.code, r.stdout)
	}

	// An API error: exit 1, the envelope on stdout, a line naming the parameter on stderr.
	r = runCLI(t, bin, "", env, "post", "/v1/webhook_endpoints", "-d", "url=ftp://example.com", "-d", "enabled_events[]=*")
	if r.code != 1 || !strings.Contains(r.stdout, `"param": "url"`) || !strings.Contains(r.stderr, "[param url]") {
		t.Fatalf("post with a bad url: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// A command line that cannot be run: exit 2, nothing sent.
	if r := runCLI(t, bin, "", env, "post", "/v1/webhook_endpoints", "-d", "amount:=12x"); r.code != 2 || !strings.Contains(r.stderr, "not JSON") {
		t.Fatalf("post with a bad -d: %d %q", r.code, r.stderr)
	}

	// delete, then the endpoint is gone.
	if r := runCLI(t, bin, "", env, "delete", "/v1/webhook_endpoints/"+other["id"].(string)); r.code != 0 {
		t.Fatalf("delete: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, bin, "", env, "get", "/v1/webhook_endpoints/"+other["id"].(string)); r.code != 1 || !strings.Contains(r.stderr, "404") {
		t.Fatalf("get after delete: %d %q", r.code, r.stderr)
	}

	// RENTAL_API_KEY wins over the stored key; a profiles file others can read is refused.
	envKey := map[string]string{"RENTAL_API_BASE": p.GatewayURL, "RENTAL_CONFIG_FILE": filepath.Join(t.TempDir(), "none.json"), "RENTAL_API_KEY": key}
	if r := runCLI(t, bin, "", envKey, "get", "/v1/webhook_endpoints/"+id); r.code != 0 {
		t.Fatalf("get with RENTAL_API_KEY: %d %s", r.code, r.stderr)
	}
	if err := os.Chmod(config, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, bin, "", env, "get", "/v1/webhook_endpoints/"+id); r.code != 1 || !strings.Contains(r.stderr, "readable by others") {
		t.Fatalf("get with a profiles file others can read: %d %q", r.code, r.stderr)
	}
}
