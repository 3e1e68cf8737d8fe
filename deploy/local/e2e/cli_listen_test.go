package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/faultproxy"
	"rentalplatform/deploy/local/e2e/receiver"
)

// localServer is the developer's server that `rental listen --forward-to` posts to: it checks
// each request's Standard Webhooks signature with the secret listen printed.
type localServer struct {
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	got    map[string]int // webhook-id → times received
	bodies []map[string]any
	bad    []string
}

func newLocalServer(t *testing.T, secret string) *localServer {
	l := &localServer{secret: secret, got: map[string]int{}}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		want, err := receiver.Sign(l.secret, id, ts, body)
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil || r.Header.Get("webhook-signature") != want {
			l.bad = append(l.bad, id)
		}
		var ev map[string]any
		json.Unmarshal(body, &ev)
		l.got[id]++
		l.bodies = append(l.bodies, ev)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *localServer) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.got)
}

// startListen starts `rental listen` and returns it with its output, read as it comes.
type listenRun struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
}

func startListen(t *testing.T, bin string, env map[string]string, args ...string) *listenRun {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"listen"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	l := &listenRun{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = l.stdout, l.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(l.stderr.String(), "Ready!") {
		if time.Now().After(deadline) {
			t.Fatalf("listen never got ready:\n%s", l.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return l
}

// stop ends listen as ^C does and returns its exit status.
func (l *listenRun) stop(t *testing.T) int {
	t.Helper()
	l.cmd.Process.Signal(syscall.SIGINT)
	err := l.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// `rental listen` forwards every event once, in a stream cut ten times while 1,000 events
// happen: it resumes after the last event it saw, and the developer's server gets each event
// once, signed with the secret listen printed. The stream's own planned ends (every 5 s here)
// and heartbeats run along.
func TestCLIListenResumesAcrossCuts(t *testing.T) {
	const events = 1000
	p := startWith(t, stackConfig{env: gatewayLimitsOff, programEnv: map[string]map[string]string{
		"webhooks-svc": {"WEBHOOKS_STREAM_HEARTBEAT": "500ms", "WEBHOOKS_STREAM_MAX_DURATION": "5s"},
	}})
	t.Cleanup(func() { p.noDeaths(t) })
	key := p.newKey(t, "acct_listen1", false)
	bin := buildCLI(t)
	gw, err := url.Parse(p.GatewayURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(gw.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	env := map[string]string{"RENTAL_API_BASE": "http://" + proxy.Addr(), "RENTAL_API_KEY": key}

	secret := strings.TrimSpace(runCLI(t, bin, "", env, "listen", "--print-secret").stdout)
	if again := strings.TrimSpace(runCLI(t, bin, "", env, "listen", "--print-secret").stdout); !strings.HasPrefix(secret, "whsec_") || again != secret {
		t.Fatalf("--print-secret: %q then %q; want one stable whsec_ secret", secret, again)
	}
	local := newLocalServer(t, secret)
	// Four endpoints updated at once, made before listen starts (their events are not
	// forwarded): the updates' events are what listen must forward, each once.
	const writers = 4
	var eps []string
	for range writers {
		eps = append(eps, p.trigger(t, key))
	}
	l := startListen(t, bin, env, "--forward-to", local.srv.URL+"/webhooks", "--events", "webhook_endpoint.updated")
	if !strings.Contains(l.stderr.String(), secret) {
		t.Fatalf("listen did not print the signing secret:\n%s", l.stderr.String())
	}

	var done atomic.Int64
	var cuts atomic.Int64
	var failed atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for w, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < events; i += writers {
				// A writer ahead of the cuts (cut k comes after the k-th eleventh of the
				// events) slows down rather than stops: the cutter waits for an event
				// forwarded over the new stream. Unpaced, the writers were done after six
				// cuts, and the cutter waited out its 30 s bound before each of the others.
				if int64(i*11/events) > cuts.Load() {
					time.Sleep(100 * time.Millisecond)
				}
				body := fmt.Sprintf(`{"description":"update %d"}`, i)
				res, err := send(context.Background(), "POST", p.GatewayURL+"/v1/webhook_endpoints/"+ep, key, json.RawMessage(body), nil)
				if err == nil && res.Status != 200 {
					err = fmt.Errorf("update %s: %d %s", ep, res.Status, res.Raw)
				}
				if err != nil {
					failed.Store(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	// Every tenth of the events, the link to listen is cut for 300 ms while updates go on,
	// each time once listen is connected again and has forwarded an event over that stream.
	// An event forwarded alone does not show it: listen may still be forwarding what it read
	// before the last cut, then sit in its backoff, and a cut then would hit no stream.
	cutterDone := make(chan struct{})
	go func() {
		defer close(cutterDone)
		for k := int64(1); k <= 10; k++ {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if done.Load() >= k*int64(events)/11 && proxy.Open() > 0 {
					break
				}
			}
			for forwarded, deadline := local.distinct(), time.Now().Add(30*time.Second); local.distinct() == forwarded && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			proxy.Cut()
			cuts.Add(1)
			time.Sleep(300 * time.Millisecond)
			if err := proxy.Restore(); err != nil {
				failed.Store(err)
				return
			}
		}
	}()
	wg.Wait()
	written := time.Since(start)
	<-cutterDone
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	made := time.Since(start)
	// Every event stored first (the platform may lag on a busy machine), then forwarded.
	var stored map[string]bool
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(time.Second) {
		if stored = p.eventIDs(t, key, "type=webhook_endpoint.updated"); len(stored) >= events || time.Now().After(deadline) {
			break
		}
	}
	for deadline := time.Now().Add(time.Minute); local.distinct() < len(stored) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // anything more would be a double
	if code := l.stop(t); code != 0 {
		t.Fatalf("listen exited %d:\n%s", code, l.stderr.String())
	}

	local.mu.Lock()
	defer local.mu.Unlock()
	seen := map[string]bool{}
	doubled := 0
	for _, n := range local.got {
		doubled += n - 1
	}
	for _, ev := range local.bodies {
		if ev["type"] != "webhook_endpoint.updated" {
			t.Fatalf("forwarded an event of type %v despite --events", ev["type"])
		}
		obj, _ := ev["data"].(map[string]any)["object"].(map[string]any)
		d, _ := obj["description"].(string)
		seen[d] = true
	}
	missed := 0
	for i := range events {
		if !seen[fmt.Sprintf("update %d", i)] {
			missed++
		}
	}
	out := l.stdout.String()
	t.Logf("listen: %d events made in %s, %d cuts over %s, %d stored, %d connections to the proxy: %d missed, %d doubled, %d badly signed; %d forward lines",
		events, written.Round(time.Millisecond), cuts.Load(), made.Round(time.Millisecond), len(stored), proxy.Connections(), missed, doubled, len(local.bad), strings.Count(out, "<-- [200] POST"))
	if len(stored) != events {
		t.Fatalf("%d of %d events stored", len(stored), events)
	}
	if missed != 0 || doubled != 0 || len(local.bad) != 0 || cuts.Load() != 10 {
		t.Fatalf("missed %d, doubled %d, badly signed %d, cuts %d\nstderr:\n%s", missed, doubled, len(local.bad), cuts.Load(), l.stderr.String())
	}
	if n := strings.Count(out, "--> webhook_endpoint.updated [evt_"); n != events {
		t.Fatalf("%d '-->' lines for %d events", n, events)
	}
	if strings.Contains(out+l.stderr.String(), key) || strings.Contains(out, "\x1b[") {
		t.Fatal("listen printed the key, or colours into a pipe")
	}
	if n := strings.Count(l.stderr.String(), "the stream was cut"); n < 10 {
		t.Fatalf("%d cuts reported by listen, want 10:\n%s", n, l.stderr.String())
	}
}

// `rental listen` in a real terminal, as a developer runs it: started in a tmux pane, an event
// triggered from another command, and the pane read: the ready line, the event and its
// forward, in colour (a terminal is attached), and ^C stops it with its summary.
func TestCLIListenInATerminal(t *testing.T) {
	tmux := needTool(t, "tmux", "apt-get install tmux")
	p := startWith(t, stackConfig{})
	t.Cleanup(func() { p.noDeaths(t) })
	key := p.newKey(t, "acct_listentty", false)
	bin := buildCLI(t)
	env := map[string]string{"RENTAL_API_BASE": p.GatewayURL, "RENTAL_API_KEY": key}
	// The README's receiver (cli/examples/webhook-receiver), checking signatures with the
	// secret listen prints.
	secret := strings.TrimSpace(runCLI(t, bin, "", env, "listen", "--print-secret").stdout)
	recvAddr := freeAddr(t)
	recv := exec.Command(goBuild(t, "./cli/examples/webhook-receiver", "webhook-receiver"), "-addr", recvAddr)
	recv.Env = []string{"WEBHOOK_SECRET=" + secret}
	recvOut := &syncBuffer{}
	recv.Stdout, recv.Stderr = recvOut, recvOut
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Process.Kill(); recv.Wait() })
	forwardTo := "http://" + recvAddr + "/webhooks"

	// The key reaches the pane through a file only this user reads, never a command line.
	dir := t.TempDir()
	script := dir + "/listen.sh"
	err := os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\nexport RENTAL_API_BASE=%s RENTAL_API_KEY=%s HOME=%s TERM=xterm-256color\nexec %s listen --forward-to %s\n",
		p.GatewayURL, key, dir, bin, forwardTo)), 0o700)
	if err != nil {
		t.Fatal(err)
	}
	socket := "rental-e2e-" + fmt.Sprint(os.Getpid())
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-L", socket}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-s", "listen", "-x", "160", "-y", "40", script+"; sleep 30")
	t.Cleanup(func() { exec.Command(tmux, "-L", socket, "kill-server").Run() })
	pane := func(want string) string {
		t.Helper()
		var got string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got = tm("capture-pane", "-p", "-e", "-t", "listen"); strings.Contains(stripANSI(got), want) {
				return got
			}
		}
		t.Fatalf("the pane never showed %q:\n%s", want, stripANSI(got))
		return ""
	}
	pane("Ready!")

	r := runCLI(t, bin, "", env, "trigger", "payment_request.succeeded")
	if r.code != 0 {
		t.Fatalf("trigger: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	pane("--> payment_request.succeeded [evt_")
	got := pane("<-- [200] POST " + forwardTo)
	if !strings.Contains(got, "\x1b[") {
		t.Fatalf("no colour in a terminal:\n%q", got)
	}
	tm("send-keys", "-t", "listen", "C-c")
	pane("Stopped:")
	if out := recvOut.String(); !strings.Contains(out, "verified payment_request.succeeded evt_") || strings.Contains(out, "refused") {
		t.Fatalf("the receiver:\n%s", out)
	}
}

// stripANSI removes colour sequences.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
