// Package e2e tests the platform from the outside: the stack is built and started as `make run`
// starts it, and every request goes through the gateway with real API keys.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"rentalplatform/deploy/local/stack"
)

// platform is the running stack shared by the tests of this package.
type platform struct {
	*stack.Stack
	logs *syncBuffer
}

// start starts a stack as `make run` does (see startWith).
func start(t *testing.T) *platform {
	t.Helper()
	return startWith(t, stackConfig{})
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
	raw := ""
	if body != nil {
		b, _ := json.Marshal(body)
		raw = string(b)
	}
	return callRaw(t, method, url, key, raw, nil)
}

// callRaw sends a request with a raw body and extra headers.
func callRaw(t *testing.T, method, url, key, body string, headers map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(withTest(context.Background(), t), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
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
