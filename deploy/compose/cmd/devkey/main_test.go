package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// adminAPI is a stand-in for the gateway's POST /admin/api_keys: it creates a key, or imports
// a given one (409 when it has it already), and refuses a wrong token.
type adminAPI struct {
	mu       sync.Mutex
	keys     map[string]bool
	requests int
	down     int // answer 503 to this many requests first (a gateway still starting)
}

const token = "admin-token-for-tests"

func (a *adminAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	if a.down > 0 {
		a.down--
		http.Error(w, `{"error":{"code":"service_unavailable"}}`, http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path != "/admin/api_keys" || r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
		return
	}
	var body struct {
		Account  string
		Livemode bool
		Secret   string
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil || body.Account != account || body.Livemode {
		http.Error(w, `{"error":{"code":"parameter_invalid"}}`, http.StatusBadRequest)
		return
	}
	if body.Secret == "" {
		body.Secret = "sk_test_" + strings.Repeat("a", 43)
	} else if a.keys[body.Secret] {
		http.Error(w, `{"error":{"code":"resource_exists"}}`, http.StatusConflict)
		return
	}
	a.keys[body.Secret] = true
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "api_key", "secret": body.Secret})
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDevkey(t *testing.T) {
	api := &adminAPI{keys: map[string]bool{}, down: 2}
	srv := httptest.NewServer(api)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "data") // missing: devkey makes it
	settings := map[string]string{"ADMIN_URL": srv.URL + "/", "ADMIN_TOKEN": token, "DATA_DIR": dir, "DEVKEY_WAIT": "10s"}

	// First start: the gateway answers 503 twice, then a key is created and kept.
	var out strings.Builder
	if err := run(t.Context(), nil, env(settings), &out); err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(read(t, filepath.Join(dir, "dev_api_key")))
	if !api.keys[key] {
		t.Fatalf("kept %q, which the admin API did not create", key)
	}
	if got := strings.TrimSpace(read(t, filepath.Join(dir, "admin_token"))); got != token {
		t.Fatalf("kept admin token %q, want %q", got, token)
	}
	for _, f := range []string{"dev_api_key", "admin_token"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", f, err, fi.Mode())
		}
	}
	if !strings.Contains(out.String(), "acct_dev") {
		t.Errorf("output %q does not say what it kept", out.String())
	}

	// Started again (a `down -v` lost the gateway's database, or not): the kept key is
	// imported, never replaced.
	api.keys = map[string]bool{}
	if err := run(t.Context(), nil, env(settings), io.Discard); err != nil {
		t.Fatal(err)
	}
	if !api.keys[key] || strings.TrimSpace(read(t, filepath.Join(dir, "dev_api_key"))) != key {
		t.Fatal("the kept key was not imported again")
	}
	if err := run(t.Context(), nil, env(settings), io.Discard); err != nil {
		t.Fatalf("the gateway has the key already (409): %v", err)
	}

	// A wrong token is refused at once, not waited on.
	settings["ADMIN_TOKEN"] = "wrong-token-0123456789"
	before := api.requests
	start := time.Now()
	if err := run(t.Context(), nil, env(settings), io.Discard); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	if api.requests-before != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("a refusal was retried: %d requests in %s", api.requests-before, time.Since(start))
	}

	// The image's HEALTHCHECK passes -healthcheck: refused, not a second seeding.
	if err := run(t.Context(), []string{"-healthcheck"}, env(settings), io.Discard); err == nil {
		t.Fatal("an argument was accepted")
	}
	// Missing settings are named.
	if err := run(t.Context(), nil, env(map[string]string{}), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "ADMIN_URL") || !strings.Contains(err.Error(), "ADMIN_TOKEN") {
		t.Fatalf("missing settings: %v", err)
	}
}

// TestDevkeyGivesUp: an admin API that never answers is waited on for DEVKEY_WAIT, then the
// seeding fails, so `up` reports it instead of hanging.
func TestDevkeyGivesUp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	err := run(t.Context(), nil, env(map[string]string{"ADMIN_URL": srv.URL, "ADMIN_TOKEN": token,
		"DATA_DIR": t.TempDir(), "DEVKEY_WAIT": "1500ms"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no key after 1.5s") {
		t.Fatalf("got %v", err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
