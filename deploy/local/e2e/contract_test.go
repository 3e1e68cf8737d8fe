package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"rentalplatform/api"
	"rentalplatform/api/contract"
)

// Every request this suite sends to a platform's gateway, and every answer, is checked against
// the API's contract (api/openapi.yaml for the public listener, api/admin.openapi.yaml for the
// admin one) by the transport of http.DefaultClient, which every request of the suite goes
// through (callRaw, Stack.Admin, the uploads). A problem fails the test that sent the request
// (callRaw puts it in the request's context), or the whole run when no test is known. At the
// end the run prints which operations and statuses were exercised, and fails when an operation
// of either document was never exercised (a full run only: -run and -short exercise a part).
// The report goes to standard output (shown with -v or on failure) and, when
// E2E_CONTRACT_REPORT names a file, there (`make test` prints it after the run).
func TestMain(m *testing.M) {
	flag.Parse()
	ct, err := newContractTransport(http.DefaultTransport)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contract:", err)
		os.Exit(2)
	}
	http.DefaultClient.Transport = ct
	code := m.Run()
	programs.remove()
	launcherBuild.remove()
	if ct.used() {
		full := flag.Lookup("test.run").Value.String() == "" && !testing.Short()
		var report bytes.Buffer
		if !ct.finish(&report, full, missingTools.list()) && code == 0 {
			code = 1
		}
		os.Stdout.Write(report.Bytes())
		if f := os.Getenv("E2E_CONTRACT_REPORT"); f != "" {
			if err := os.WriteFile(f, report.Bytes(), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "contract:", err)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// contractTransport checks the exchanges with the hosts registered as a gateway's listeners.
type contractTransport struct {
	base           http.RoundTripper
	public, admin  *contract.Checker
	mu             sync.Mutex
	hosts          map[string]*contract.Checker
	registered     bool // a platform was registered (and may be gone)
	orphanProblems []string
}

func newContractTransport(base http.RoundTripper) (*contractTransport, error) {
	public, err := contract.New("public", api.PublicJSON())
	if err != nil {
		return nil, err
	}
	admin, err := contract.New("admin", api.AdminJSON())
	if err != nil {
		return nil, err
	}
	return &contractTransport{base: base, public: public, admin: admin, hosts: map[string]*contract.Checker{}}, nil
}

// contracts is the transport TestMain installed.
func contracts() *contractTransport {
	ct, _ := http.DefaultClient.Transport.(*contractTransport)
	return ct
}

// registerGateway has the exchanges with a platform's listeners checked until the test ends
// (a later platform's program may get the port).
func registerGateway(t testing.TB, publicURL, adminURL string) {
	ct := contracts()
	if ct == nil {
		return
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	var hosts []string
	for u, c := range map[string]*contract.Checker{publicURL: ct.public, adminURL: ct.admin} {
		p, err := url.Parse(u)
		if err != nil || p.Host == "" {
			t.Fatalf("contract: not a URL: %q", u)
		}
		ct.hosts[p.Host] = c
		hosts = append(hosts, p.Host)
	}
	ct.registered = true
	t.Cleanup(func() {
		ct.mu.Lock()
		defer ct.mu.Unlock()
		for _, h := range hosts {
			delete(ct.hosts, h)
		}
	})
}

func (ct *contractTransport) used() bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.registered || len(ct.hosts) > 0
}

type testKey struct{}

// withTest has the contract's problems with a request reported to t.
func withTest(ctx context.Context, t testing.TB) context.Context {
	return context.WithValue(ctx, testKey{}, t)
}

func (ct *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct.mu.Lock()
	c := ct.hosts[req.URL.Host]
	ct.mu.Unlock()
	if c == nil {
		return ct.base.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := ct.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A stream (GET /v1/events/stream) does not end by itself: reading it whole here
		// held the test until its deadline. It is checked when the test closes it, with what
		// the test read (its status, headers and media type: the document describes the
		// messages in prose).
		resp.Body = &streamBody{ReadCloser: resp.Body, closed: func(read []byte) {
			ct.report(req, c.Check(req, body, resp, read))
		}}
		return resp, nil
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		// A cut answer is the test's business (some cut on purpose); it gets the error.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(respBody), errReader{err}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	ct.report(req, c.Check(req, body, resp, respBody))
	return resp, nil
}

// report fails the test that sent req for each of the contract's problems with its exchange,
// or the whole run when no test is known.
func (ct *contractTransport) report(req *http.Request, problems []string) {
	if len(problems) == 0 {
		return
	}
	if t, ok := req.Context().Value(testKey{}).(testing.TB); ok {
		for _, p := range problems {
			t.Errorf("contract: %s", p)
		}
		return
	}
	ct.mu.Lock()
	ct.orphanProblems = append(ct.orphanProblems, problems...)
	ct.mu.Unlock()
}

// streamBody is the body of a stream, which runs closed once with what was read of it (its
// first 64 KiB: a stream may run for long).
type streamBody struct {
	io.ReadCloser
	read   bytes.Buffer
	once   sync.Once
	closed func(read []byte)
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Write(p[:min(n, max(0, 64<<10-b.read.Len()))])
	return n, err
}

func (b *streamBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.closed(b.read.Bytes()) })
	return err
}

// reportLines are lines tests add, from any goroutine, for the run's report.
type reportLines struct {
	mu    sync.Mutex
	lines []string
}

func (r *reportLines) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *reportLines) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// artifacts are files tests keep for people to look at (a screenshot), listed in the report.
var artifacts reportLines

// artifact lists a file a test kept in the run's report.
func artifact(t *testing.T, what, path string) {
	t.Logf("%s: %s", what, path)
	artifacts.add("%s (%s): %s", t.Name(), what, path)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// finish prints the coverage of both documents and the problems no test took; it reports
// false when there were such problems, or (full) an operation nothing exercised. A full run
// with tests skipped for a missing program (skipped, see needTool) exercised only part of the
// contract: it names what nothing exercised and those tests, and does not fail for it.
func (ct *contractTransport) finish(w io.Writer, full bool, skipped []string) bool {
	ok := true
	for _, d := range []struct {
		name string
		c    *contract.Checker
	}{{"public", ct.public}, {"admin", ct.admin}} {
		cov := d.c.Coverage()
		fmt.Fprint(w, cov.Report(d.name))
		un := cov.Unexercised()
		if !full || len(un) == 0 {
			continue
		}
		if len(skipped) > 0 {
			fmt.Fprintf(w, "not checked here: %d operations of the %s document were exercised by no test of this run, which skipped %d tests for a program not installed (%s); CI installs them and checks every operation:\n",
				len(un), d.name, len(skipped), strings.Join(skipped, ", "))
		} else {
			ok = false
			fmt.Fprintf(w, "FAIL: %d operations of the %s document were exercised by no test:\n", len(un), d.name)
		}
		for _, o := range un {
			fmt.Fprintf(w, "  %s\n", o)
		}
	}
	for _, a := range artifacts.list() {
		fmt.Fprintf(w, "artifact: %s\n", a)
	}
	if len(ct.orphanProblems) > 0 {
		ok = false
		fmt.Fprintf(w, "FAIL: exchanges outside any test broke the contract:\n  %s\n", strings.Join(ct.orphanProblems, "\n  "))
	}
	return ok
}

// A full run fails for an operation nothing exercised, unless it skipped tests for a program
// not installed here (a developer's machine without Chromium): then it says so instead, since
// the operations left are likely those tests' (README: such tests skip, saying so).
func TestContractCoverageWithToolsMissing(t *testing.T) {
	ct, err := newContractTransport(http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		full    bool
		skipped []string
		ok      bool
		says    string
	}{
		{"full run", true, nil, false, "operations of the public document were exercised by no test:\n"},
		{"full run, a browser test skipped", true, []string{"TestWebhookPortal (chromium)"}, true,
			"operations of the public document were exercised by no test of this run, which skipped 1 tests for a program not installed (TestWebhookPortal (chromium)); CI installs them"},
		{"-run or -short", false, nil, true, "exercised"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w bytes.Buffer
			if ok := ct.finish(&w, c.full, c.skipped); ok != c.ok {
				t.Errorf("finish reported %v, want %v:\n%s", ok, c.ok, w.String())
			}
			if !strings.Contains(w.String(), c.says) {
				t.Errorf("report does not say %q:\n%s", c.says, w.String())
			}
			if !c.full && strings.Contains(w.String(), "exercised by no test") {
				t.Errorf("a partial run lists unexercised operations:\n%s", w.String())
			}
		})
	}
}
