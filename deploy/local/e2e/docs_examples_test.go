package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// example is a shell block of a Markdown file that calls the API with curl.
type example struct {
	file string
	line int // of the opening fence
	text string
	// skip is why the block is not run (an HTML comment `<!-- not run: why -->` right before
	// it); empty for a block that runs.
	skip string
}

var notRun = regexp.MustCompile(`^<!--\s*not run:\s*(.+?)\s*-->$`)

// examples returns the curl examples of the README and docs/*.md.
func examples(t *testing.T, root string) []example {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []example
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		var cur *example
		var skip string
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			switch {
			case cur == nil && (line == "```sh" || line == "```bash" || line == "```shell"):
				cur = &example{file: rel, line: n, skip: skip}
			case cur != nil && line == "```":
				if strings.Contains(cur.text, "curl ") {
					out = append(out, *cur)
				}
				cur, skip = nil, ""
			case cur != nil:
				cur.text += line + "\n"
			case strings.TrimSpace(line) == "":
			default:
				skip = ""
				if m := notRun.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
					skip = m[1]
				}
			}
		}
	}
	return out
}

// envelopeCode finds the codes of the error envelopes in curl's output.
var envelopeCode = regexp.MustCompile(`"error":\{[^{}]*?"code":"([a-z_]+)"`)

// The curl examples of README.md and docs/*.md run, as written, against a platform started by
// `make run`'s launcher (its rate limits on, the dev key and admin token in .data/). Only the
// addresses are rewritten: 127.0.0.1:8080 and :8081 become this platform's, behind a proxy that
// checks every exchange against the contract. An example fails when a command of it fails
// (bash -euo pipefail: curl not reaching the platform included), or when an answer is an error
// envelope whose code the example does not name (an
// example shows the errors it means to show, in a comment beside the call). A block preceded
// by `<!-- not run: why -->` is listed with its reason and not run.
func TestDocsExamples(t *testing.T) {
	bash := needTool(t, "bash", "the examples are shell")
	needTool(t, "curl", "the examples use curl")
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	all := examples(t, root)
	if len(all) < 4 {
		t.Fatalf("found %d curl examples in README.md and docs/*.md", len(all))
	}
	// The platform as `make run` starts it: its launcher, its settings, DATA_DIR ./.data of the
	// folder the examples run in.
	work := t.TempDir()
	l := startLauncher(t, buildLauncher(t), filepath.Join(work, ".data"), map[string]string{"GATEWAY_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0"})
	l.running(t)
	public, admin := hostOf(t, contractProxy(t, l.gatewayURL)), hostOf(t, contractProxy(t, l.adminURL))
	ran := 0
	for _, ex := range all {
		name := fmt.Sprintf("%s:%d", ex.file, ex.line)
		if ex.skip != "" {
			t.Logf("%s: not run: %s", name, ex.skip)
			continue
		}
		if ran++; ran > 1 {
			// A person pastes one block at a time: each starts with the rate limit's burst
			// (25 requests in test mode) available again, as it would be.
			time.Sleep(time.Second)
		}
		t.Run(name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "curl.log")
			script := strings.NewReplacer("127.0.0.1:8080", public, "127.0.0.1:8081", admin).Replace(ex.text)
			// curl as written, its output also kept for the check below. The block runs as the
			// Compose test runs the README's (bash -euo pipefail): a command that fails, curl
			// included (the platform not reached), fails the example.
			prelude := `curl() { command curl "$@" | tee -a "$CURL_LOG"; }` + "\n"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "-euo", "pipefail", "-c", prelude+script)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "CURL_LOG="+log)
			out, err := cmd.CombinedOutput()
			t.Logf("output:\n%s", out)
			if ctx.Err() != nil {
				t.Fatalf("the example did not finish in time: %v", err)
			}
			if err != nil {
				t.Errorf("the example failed (%v): a command of it failed as written", err)
			}
			logged, err := os.ReadFile(log)
			if err != nil {
				t.Fatalf("the example ran no curl: %v", err)
			}
			for _, m := range envelopeCode.FindAllSubmatch(logged, -1) {
				if code := string(m[1]); !strings.Contains(ex.text, code) {
					t.Errorf("an answer is the error %s, which the example does not say it expects:\n%s", code, ex.text)
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no example ran")
	}
}

func hostOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}
