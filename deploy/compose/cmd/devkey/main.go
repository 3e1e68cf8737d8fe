// Command devkey is the one-shot `devkey` service of deploy/compose/compose.yaml: it gives a
// Compose platform what `make run` gives a local one, so that the README walkthrough runs
// unchanged against either. Once the gateway is healthy it keeps the admin token in
// DATA_DIR/admin_token and the test-mode key of acct_dev in DATA_DIR/dev_api_key (the
// repository's .data/, bind-mounted), obtained as the launcher obtains it: through the admin
// API, importing the key already kept there so it survives `docker compose down -v`.
//
// Settings (environment only): ADMIN_URL and ADMIN_TOKEN (required), DATA_DIR [/data],
// DATA_OWNER_FROM (a path whose owner the files are given, so a user who is not root can read
// what a container running as root wrote; unset: left as written), DEVKEY_WAIT [60s] (how long
// the admin API may take to answer).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"rentalplatform/libs/config"
)

// account is the account `make run` seeds its test-mode key for.
const account = "acct_dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "devkey:", err)
		os.Exit(1)
	}
}

type settings struct {
	adminURL, adminToken, dataDir, ownerFrom string
	wait                                     time.Duration
}

func load(getenv config.Getenv) (settings, error) {
	r := config.NewReader(getenv)
	s := settings{
		adminURL:   strings.TrimRight(r.Required("ADMIN_URL"), "/"),
		adminToken: r.Required("ADMIN_TOKEN"),
		dataDir:    r.String("DATA_DIR", "/data"),
		ownerFrom:  r.String("DATA_OWNER_FROM", ""),
		wait:       r.Duration("DEVKEY_WAIT", time.Minute),
	}
	return s, r.Err()
}

func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	// Arguments are refused rather than ignored: Docker's HEALTHCHECK of the shared image
	// (`-healthcheck`) must not run a second seeding beside the first.
	if len(args) > 0 {
		return fmt.Errorf("takes no arguments (settings come from the environment), got %q", args)
	}
	s, err := load(getenv)
	if err != nil {
		return err
	}
	keyFile := filepath.Join(s.dataDir, "dev_api_key")
	kept := ""
	if b, err := os.ReadFile(keyFile); err == nil {
		kept = strings.TrimSpace(string(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key, err := seed(ctx, s, kept)
	if err != nil {
		return err
	}
	owner := ownerOf(s.ownerFrom)
	if owner != nil {
		// Docker creates a missing bind-mounted folder as root; `make run` writes there too.
		owner.give(s.dataDir)
	}
	if err := keep(filepath.Join(s.dataDir, "admin_token"), s.adminToken, owner); err != nil {
		return err
	}
	if err := keep(keyFile, key, owner); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "test-mode key of %s kept in %s, admin token in %s\n", account, keyFile, filepath.Join(s.dataDir, "admin_token"))
	return nil
}

// seed creates the key of acct_dev through the admin API, or imports the kept one (a no-op
// when the gateway has it already: 409), retrying while the admin API does not answer yet.
func seed(ctx context.Context, s settings, kept string) (string, error) {
	body := map[string]any{"account": account, "livemode": false}
	if kept != "" {
		body["secret"] = kept
	}
	raw, _ := json.Marshal(body)
	deadline := time.Now().Add(s.wait)
	for {
		status, answer, err := post(ctx, s, raw)
		switch {
		case err == nil && status == http.StatusCreated && kept == "":
			var created struct{ Secret string }
			if err := json.Unmarshal(answer, &created); err != nil || created.Secret == "" {
				return "", fmt.Errorf("the admin API created a key but returned no secret: %s", answer)
			}
			return created.Secret, nil
		case err == nil && (status == http.StatusCreated || status == http.StatusConflict):
			return kept, nil
		case err == nil && status < 500:
			// A refusal (a wrong token, a kept key of the wrong form) does not heal by waiting.
			return "", fmt.Errorf("the admin API answered %d: %s", status, answer)
		case err == nil:
			err = fmt.Errorf("the admin API answered %d: %s", status, answer)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no key after %s: %w", s.wait, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func post(ctx context.Context, s settings, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.adminURL+"/admin/api_keys", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, answer, err
}

// keep writes a secret atomically, readable by its owner alone, as the launcher keeps it.
func keep(path, secret string, owner *fileOwner) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.WriteString(secret + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if owner != nil {
		owner.give(tmp.Name())
	}
	return os.Rename(tmp.Name(), path)
}
