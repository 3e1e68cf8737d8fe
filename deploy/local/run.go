package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"rentalplatform/deploy/local/stack"
	"rentalplatform/libs/config"
)

// devOnly are the safety settings, by program, the local stack relaxes by default.
var devOnly = map[string][]string{
	"webhooks-svc":     {"WEBHOOKS_ALLOW_PRIVATE", "WEBHOOKS_TLS_INSECURE"},
	"verification-svc": {"VERIFICATION_WEBHOOK_ALLOW_PRIVATE"},
}

// run takes the whole environment rather than a getenv: handing each program the settings it
// documents (stack.Options.Environ) is the launcher's job.
func run(ctx context.Context, environ []string, stdout io.Writer) error {
	opts, err := options(lookup(environ), environ, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Building and starting the Rental Platform (data in %s)...\n", opts.DataDir)
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return err
	}
	printBanner(stdout, st, opts)

	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "\nStopping...")
		if err := st.Stop(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "Stopped.")
		return nil
	case err := <-st.Died():
		fmt.Fprintf(stdout, "\n%v.\nStopping everything.\n", err)
		return errors.Join(err, st.Stop())
	}
}

// options reads the launcher's own settings through getenv (lookup over environ) and hands
// environ to the stack.
func options(getenv config.Getenv, environ []string, stdout io.Writer) (stack.Options, error) {
	r := config.NewReader(getenv)
	root, err := repoRoot(r.String("REPO_ROOT", ""))
	if err != nil {
		return stack.Options{}, err
	}
	dataDir := r.String("DATA_DIR", ".data")
	if !filepath.IsAbs(dataDir) {
		dataDir = filepath.Join(root, dataDir)
	}
	opts := stack.Options{
		RepoRoot:    root,
		DataDir:     dataDir,
		MongoURI:    r.String("MONGODB_URI", ""),
		RedisURL:    r.String("REDIS_URL", ""),
		GatewayAddr: r.String("GATEWAY_ADDR", "127.0.0.1:8080"),
		AdminAddr:   r.String("ADMIN_ADDR", "127.0.0.1:8081"),
		AdminToken:  r.String("ADMIN_TOKEN", ""),
		DevAPIKey:   r.String("RENTAL_DEV_API_KEY", ""),
		// Services take free ports unless told otherwise: only the gateway's addresses face
		// the user, and fixed service ports would keep two stacks from running side by side.
		ServiceAddrs: map[string]string{},
		Environ:      environ,
		ProgramEnv:   map[string]map[string]string{},
		Output:       stdout,
	}
	for name, v := range stack.ServiceAddrVars() {
		if addr := r.String(v, ""); addr != "" {
			opts.ServiceAddrs[name] = addr
		}
	}
	if err := r.Err(); err != nil {
		return stack.Options{}, err
	}
	if opts.AdminToken == "" {
		if opts.AdminToken, err = keptSecret(filepath.Join(dataDir, "admin_token"), "admin_"); err != nil {
			return stack.Options{}, err
		}
	}
	// On one machine, webhook receivers are usually on localhost with self-signed certificates,
	// so the local stack lifts the private-address guards (of webhook endpoints and of
	// verification sessions' webhook_url) and certificate checks (all off by default in every
	// deployment) unless told otherwise; the banner says so.
	for program, settings := range devOnly {
		opts.ProgramEnv[program] = map[string]string{}
		for _, k := range settings {
			opts.ProgramEnv[program][k] = r.String(k, "true")
		}
	}
	return opts, nil
}

// lookup is os.Getenv over environ: the first of duplicates counts.
func lookup(environ []string) func(string) string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, seen := m[k]; !seen {
				m[k] = v
			}
		}
	}
	return func(k string) string { return m[k] }
}

func printBanner(w io.Writer, st *stack.Stack, opts stack.Options) {
	getenv := lookup(opts.Environ)
	var b strings.Builder
	b.WriteString("\n================ Rental Platform is running ================\n")
	fmt.Fprintf(&b, "  API gateway    %s\n", st.GatewayURL)
	fmt.Fprintf(&b, "  Admin API      %s   (Authorization: Bearer %s, kept in %s unless ADMIN_TOKEN is set)\n", st.AdminURL, st.AdminToken, filepath.Join(opts.DataDir, "admin_token"))
	fmt.Fprintf(&b, "  Test API key   %s   (account acct_dev, kept in %s)\n", st.DevAPIKey, filepath.Join(opts.DataDir, "dev_api_key"))
	b.WriteString("\n  Programs (the services on free ports unless their *_ADDR is set), with their Prometheus metrics:\n")
	for _, p := range st.Programs() {
		fmt.Fprintf(&b, "    %-17s pid %-8d %-24s %s\n", p.Name, p.PID, p.URL, p.MetricsURL)
	}
	b.WriteString("\n  Try it:\n")
	fmt.Fprintf(&b, "    curl %s/v1/webhook_endpoints \\\n", st.GatewayURL)
	fmt.Fprintf(&b, "      -H 'Authorization: Bearer %s' \\\n", st.DevAPIKey)
	b.WriteString("      -H 'Content-Type: application/json' \\\n")
	b.WriteString("      -d '{\"url\":\"https://example.com/hooks\",\"enabled_events\":[\"*\"]}'\n")
	if len(st.Embedded) > 0 {
		b.WriteString("\n  Embedded for this run:\n")
		for _, e := range st.Embedded {
			fmt.Fprintf(&b, "    - %s\n", e)
		}
		b.WriteString("  Use real servers instead: MONGODB_URI=mongodb://host:27017 REDIS_URL=redis://host:6379/0 make run\n")
	} else {
		b.WriteString("\n  Using MONGODB_URI and REDIS_URL as given; nothing embedded.\n")
	}
	// The gateway's defaults, shown so a first user knows why a loop of requests gets 429.
	var limits []string
	for _, l := range []struct{ name, env, def string }{
		{"test", "GATEWAY_RATE_LIMIT_TEST", "25"}, {"live", "GATEWAY_RATE_LIMIT_LIVE", "100"},
	} {
		v := getenv(l.env)
		if v == "" {
			v = l.def
		}
		if v == "0" {
			v = "off"
		} else {
			v += " req/s"
		}
		limits = append(limits, fmt.Sprintf("%s %s (%s)", l.name, v, l.env))
	}
	fmt.Fprintf(&b, "\n  Rate limits per account: %s; 0 turns one off\n", strings.Join(limits, ", "))
	b.WriteString("\n  Webhook deliveries on this machine:\n")
	for _, program := range []string{"webhooks-svc", "verification-svc"} {
		for _, k := range devOnly[program] {
			v := opts.ProgramEnv[program][k]
			fmt.Fprintf(&b, "    %s=%s", k, v)
			if v == "true" {
				b.WriteString("   (relaxed for local receivers; off in any real deployment)")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n  Ctrl-C stops everything. Logs of every program follow, prefixed with its name.\n")
	b.WriteString("=============================================================\n")
	fmt.Fprint(w, b.String())
}

// keptSecret returns the secret stored in path, creating it on first use, so a second
// `make run` prints the same admin token.
func keptSecret(path, prefix string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	secret := prefix + hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keeping %s: %w", path, err)
	}
	return secret, nil
}

// repoRoot finds the workspace root (the folder with go.work) from the working directory.
func repoRoot(given string) (string, error) {
	if given != "" {
		return filepath.Abs(given)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work above %s: run from inside the repository or set REPO_ROOT", dir)
		}
	}
}
