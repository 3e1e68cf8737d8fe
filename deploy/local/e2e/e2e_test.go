// Package e2e tests the platform from the outside: the stack is built and started as `make run`
// starts it, and every request goes through the gateway with real API keys.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/deploy/local/stack"
	"rentalplatform/embedded/testkit"
)

// platform is the running stack shared by the tests of this package.
type platform struct {
	*stack.Stack
	logs *syncBuffer
}

func start(t *testing.T) *platform {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and starts the whole stack")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	opts := stack.Options{
		RepoRoot:    root,
		DataDir:     t.TempDir(),
		GatewayAddr: "127.0.0.1:0",
		AdminAddr:   "127.0.0.1:0",
		Ephemeral:   true,
		Env:         map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "LOG_LEVEL": "warn"},
	}
	// As `make run`: embedded stores unless real ones are configured. A real server is shared
	// with other test binaries, so this run gets its own databases.
	if uri := os.Getenv("MONGODB_URI"); uri != "" {
		opts.MongoURI = uri
		opts.DatabasePrefix = fmt.Sprintf("e2e_%d_", time.Now().UnixNano())
	}
	if os.Getenv("REDIS_URL") != "" {
		opts.RedisURL = testkit.Redis(t)
	}
	logs := &syncBuffer{}
	opts.Output = logs
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting the stack: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stopping the stack: %v", err)
		}
		if t.Failed() {
			t.Logf("stack logs:\n%s", logs.String())
		}
	})
	return &platform{Stack: st, logs: logs}
}

type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func (r response) errCode() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r response) errParam() string {
	e, _ := r.Body["error"].(map[string]any)
	p, _ := e["param"].(string)
	return p
}

func call(t *testing.T, method, url, key string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	return out
}

func (p *platform) newKey(t *testing.T, account string, live bool) string {
	t.Helper()
	res, status, err := p.Admin(context.Background(), http.MethodPost, "/admin/api_keys", map[string]any{"account": account, "livemode": live})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("creating a key for %s: %d %v %v", account, status, res, err)
	}
	secret, _ := res["secret"].(string)
	prefix := "sk_test_"
	if live {
		prefix = "sk_live_"
	}
	if !strings.HasPrefix(secret, prefix) {
		t.Fatalf("secret %q does not start with %s", secret, prefix)
	}
	return secret
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
