// Package load holds what the load drivers under deploy/local/cmd (bench, soak) share: an HTTP
// client sized for load, an API client with a key, percentiles, and a program's resident
// memory read from /proc.
package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/stack"
)

// NewClient is a client holding up to conns connections to each host.
func NewClient(conns int) *fasthttp.Client {
	return &fasthttp.Client{MaxConnsPerHost: conns, MaxConnWaitTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 10 * time.Second}
}

// API calls the platform's API with one key.
type API struct {
	Base, Key string
	Client    *fasthttp.Client
}

// Call sends a request (a JSON body unless empty) and returns the body of a 200 answer; any
// other status is an error naming it.
func (a API) Call(method, path, body string) ([]byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(a.Base + path)
	req.Header.SetMethod(method)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	if body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(body)
	}
	if err := a.Client.DoTimeout(req, resp, 30*time.Second); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode() != 200 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode(), resp.Body())
	}
	return append([]byte(nil), resp.Body()...), nil
}

// CreateEndpoint creates a webhook endpoint subscribed to eventType and returns its id.
func (a API) CreateEndpoint(url, eventType string) (string, error) {
	b, err := a.Call(fasthttp.MethodPost, "/v1/webhook_endpoints", fmt.Sprintf(`{"url":%q,"enabled_events":[%q]}`, url, eventType))
	if err != nil {
		return "", err
	}
	var out struct{ ID string }
	if err := json.Unmarshal(b, &out); err != nil || out.ID == "" {
		return "", fmt.Errorf("create endpoint: %s", b)
	}
	return out.ID, nil
}

// Update sets a webhook endpoint's description (a webhook_endpoint.updated event).
func (a API) Update(id, description string) error {
	_, err := a.Call(fasthttp.MethodPost, "/v1/webhook_endpoints/"+id, fmt.Sprintf(`{"description":%q}`, description))
	return err
}

// Delete deletes a webhook endpoint.
func (a API) Delete(id string) error {
	_, err := a.Call(fasthttp.MethodDelete, "/v1/webhook_endpoints/"+id, "")
	return err
}

// Any reports whether a list (its path with limit=1) has any object.
func (a API) Any(path string) (bool, error) {
	raw, err := a.Call(fasthttp.MethodGet, path, "")
	if err != nil {
		return false, err
	}
	var l struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return false, fmt.Errorf("GET %s: %w", path, err)
	}
	return len(l.Data) > 0, nil
}

// NewKey creates a test-mode API key of account through the admin API.
func NewKey(ctx context.Context, st *stack.Stack, account string) (string, error) {
	res, status, err := st.Admin(ctx, http.MethodPost, "/admin/api_keys", map[string]any{"account": account})
	if err != nil || status != http.StatusCreated {
		return "", fmt.Errorf("creating a key for %s: %d %v %v", account, status, res, err)
	}
	key, _ := res["secret"].(string)
	return key, nil
}

// Pct is the p-th percentile of sorted (0 when empty; p 100 is the largest).
func Pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := len(sorted) * p / 100
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// Ms formats d in milliseconds with three decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }

// MiBs formats bytes in MiB; "n/a" for 0 (what /proc did not tell).
func MiBs(b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// RSS is a process's resident memory, in bytes; 0 where /proc does not tell.
type RSS struct{ RSS, HWM int64 }

// ReadRSS reads VmRSS and VmHWM of pid from /proc (Linux).
func ReadRSS(pid int) RSS {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return RSS{}
	}
	var out RSS
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if name == "VmRSS" {
			out.RSS = kb << 10
		} else {
			out.HWM = kb << 10
		}
	}
	return out
}

// MultipartFile is an upload body: the file part (named name), then document_type
// miscellaneous; and its Content-Type.
func MultipartFile(file []byte, name string) ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, _ := w.CreateFormFile("file", name)
	_, _ = fw.Write(file)
	_ = w.WriteField("document_type", "miscellaneous")
	_ = w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// Poll calls cond every interval until it reports true, fails, or timeout passes.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Platform is the platform a load driver started: the stack, the repository it was built from,
// the folder holding its data and the file holding its programs' logs.
type Platform struct {
	*stack.Stack
	Root, DataDir string
	Log           *os.File
}

// StartPlatform starts the platform as `make run` does (embedded stores unless MONGODB_URI /
// REDIS_URL are set) for the load driver name ("bench", "soak"), from the repository in the
// working directory: its data in a temporary folder, its logs in a file of its own under .data
// (two drivers at once would otherwise write over each other's), deliveries allowed to a
// local TLS receiver with a self-signed certificate and the gateway's rate limits off (the
// default test-mode limit, 25 req/s, would refuse most of a load), plus env. Stop undoes it.
func StartPlatform(ctx context.Context, name string, getenv func(string) string, env map[string]string, stdout io.Writer) (p *Platform, err error) {
	p = &Platform{}
	if p.Root, err = filepath.Abs("."); err != nil {
		return nil, err
	}
	if p.DataDir, err = os.MkdirTemp("", "rental-"+name+"-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if err := os.MkdirAll(filepath.Join(p.Root, ".data"), 0o755); err != nil {
		return nil, err
	}
	if p.Log, err = os.CreateTemp(filepath.Join(p.Root, ".data"), name+"-stack-*.log"); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "Starting the platform (as make run does; its logs go to %s)...\n", p.Log.Name())
	all := map[string]string{"PATH": getenv("PATH"), "HOME": getenv("HOME"),
		"WEBHOOKS_ALLOW_PRIVATE": "true", "WEBHOOKS_TLS_INSECURE": "true",
		"GATEWAY_RATE_LIMIT_TEST": "0", "GATEWAY_RATE_LIMIT_LIVE": "0", "GATEWAY_AUTH_FAILURE_LIMIT": "0"}
	if v := getenv("PROFILES_ENABLED"); v != "" {
		all["PROFILES_ENABLED"] = v // profiles of every program on its metrics listener
	}
	for k, v := range env {
		all[k] = v
	}
	p.Stack, err = stack.Start(ctx, stack.Options{
		RepoRoot: p.Root, DataDir: p.DataDir,
		MongoURI: getenv("MONGODB_URI"), RedisURL: getenv("REDIS_URL"),
		DatabasePrefix: fmt.Sprintf("%s_%d_", name, time.Now().Unix()),
		GatewayAddr:    "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Env: all, Output: p.Log,
	})
	return p, err
}

// Stop stops the platform and removes its data; its log stays.
func (p *Platform) Stop() {
	if p.Stack != nil {
		_ = p.Stack.Stop()
	}
	if p.Log != nil {
		_ = p.Log.Close()
	}
	_ = os.RemoveAll(p.DataDir)
}
