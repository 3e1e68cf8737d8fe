package e2e

// The launcher itself (`make run`, issue 10): started as the binary `make run` builds, killed,
// started again, side by side, and in the way of a taken address.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// launcher is one `make run` launcher process started by a test.
type launcher struct {
	cmd  *exec.Cmd
	out  *syncBuffer // its stdout and stderr
	done chan struct{}
	err  error // Wait's, once done is closed

	dataDir    string
	gatewayURL string
	adminURL   string
}

// buildLauncher returns the launcher as `make run` builds it (the suite builds it once).
func buildLauncher(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and starts the whole stack")
	}
	return filepath.Join(launcherBuild.folder(t, repoRoot(t)), "rental-local")
}

// goBuild builds the package pkg of the repository (as `go build` at its root) into a
// temporary folder as name, and returns its path.
func goBuild(t *testing.T, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if err := goBuildTo(context.Background(), repoRoot(t), pkg, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// goBuildTo builds the package pkg of the repository at root (as `go build` there) into bin.
func goBuildTo(ctx context.Context, root, pkg, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	return nil
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// launchEnv is the test's environment for a launcher: what `go build` needs, without the
// settings that would point it at shared servers or fixed addresses, plus env.
func launchEnv(t *testing.T, env map[string]string) []string {
	t.Helper()
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "REDIS_URL", k == "MONGODB_URI", k == "DATA_DIR", k == "ADMIN_TOKEN", k == "RENTAL_DEV_API_KEY",
			strings.HasSuffix(k, "_ADDR"), env[k] != "":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "REPO_ROOT="+repoRoot(t), "LOG_LEVEL=warn")
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// startLauncher starts the launcher binary with env and, unless wantRunning is false, waits
// for its banner. On the test's end it is killed if still running, with any program of its
// data folder that outlived it.
func startLauncher(t *testing.T, bin, dataDir string, env map[string]string) *launcher {
	t.Helper()
	env["DATA_DIR"] = dataDir
	l := &launcher{out: &syncBuffer{}, done: make(chan struct{}), dataDir: dataDir}
	l.cmd = exec.Command(bin)
	l.cmd.Dir = repoRoot(t)
	l.cmd.Env = launchEnv(t, env)
	l.cmd.Stdout, l.cmd.Stderr = l.out, l.out
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.err = l.cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		_ = l.cmd.Process.Kill()
		<-l.done
		killLeftovers(t, dataDir)
		if t.Failed() {
			t.Logf("launcher output (DATA_DIR %s):\n%s", dataDir, tail(l.out.String(), 200))
		}
	})
	return l
}

var (
	bannerGateway = regexp.MustCompile(`(?m)^\s+API gateway\s+(\S+)`)
	bannerAdmin   = regexp.MustCompile(`(?m)^\s+Admin API\s+(\S+)`)
)

// running waits until the launcher prints its banner and reads the addresses from it.
func (l *launcher) running(t *testing.T) {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for !strings.Contains(l.out.String(), "Rental Platform is running") {
		select {
		case <-l.done:
			t.Fatalf("the launcher exited before it was running: %v\n%s", l.err, tail(l.out.String(), 100))
		case <-deadline:
			t.Fatalf("the launcher is not running after 5 minutes:\n%s", tail(l.out.String(), 100))
		case <-time.After(100 * time.Millisecond):
		}
	}
	out := l.out.String()
	l.gatewayURL = submatch(t, bannerGateway, out)
	l.adminURL = submatch(t, bannerAdmin, out)
	registerGateway(t, l.gatewayURL, l.adminURL)
}

// programs are the launcher's child processes, by pid, with their executables: as the
// kernel sees them, not as the launcher says.
func (l *launcher) programs(t *testing.T) map[int]string {
	t.Helper()
	out := map[int]string{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(pid); ok && ppid == l.cmd.Process.Pid {
			exe, _ := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
			out[pid] = exe
		}
	}
	return out
}

func submatch(t *testing.T, re *regexp.Regexp, s string) string {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in the launcher's output:\n%s", re, tail(s, 60))
	}
	return m[1]
}

// stop stops the launcher as Ctrl-C does and expects a clean exit.
func (l *launcher) stop(t *testing.T) {
	t.Helper()
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the launcher did not stop within 2 minutes of an interrupt")
	}
	if l.err != nil || !strings.Contains(l.out.String(), "Stopped.") {
		t.Fatalf("stop: %v\n%s", l.err, tail(l.out.String(), 60))
	}
}

// devKey is the dev key the launcher keeps in its data folder.
func (l *launcher) devKey(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.dataDir, "dev_api_key"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// procStat reads the state and parent of pid from /proc/<pid>/stat.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses, the state follows the last ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// alive reports whether pid is a process that is not a zombie (a zombie holds no ports).
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z"
}

// killLeftovers kills processes running a program built into dataDir (which only this test
// uses), so a failing test leaves nothing behind holding ports. The kernel's Pdeathsig kill of a
// launcher's programs is a signal like any other: on a busy machine a program can take a moment
// to be scheduled and die after its launcher's Wait returns, so only one still alive after
// leftoverGrace counts as having outlived its launcher.
func killLeftovers(t *testing.T, dataDir string) {
	t.Helper()
	deadline := time.Now().Add(leftoverGrace)
	left := leftovers(dataDir)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		left = leftovers(dataDir)
	}
	for pid, exe := range left {
		t.Errorf("pid %d (%s) outlived its launcher by %s; killed", pid, exe, leftoverGrace)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// leftoverGrace is how long a launcher's programs may take to die after it.
const leftoverGrace = 10 * time.Second

// leftovers are the live (not zombie) processes running a program built into dataDir.
func leftovers(dataDir string) map[int]string {
	bin := filepath.Join(dataDir, "bin") + string(filepath.Separator)
	out := map[int]string{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe")); err == nil && strings.HasPrefix(exe, bin) && alive(pid) {
			out[pid] = exe
		}
	}
	return out
}

// After kill -9 of the launcher no program of it runs on, and the next start on the same
// addresses and data folder works.
func TestLauncherKilledTakesItsProgramsAlong(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills a process's children with it (Pdeathsig)")
	}
	bin := buildLauncher(t)
	dataDir := t.TempDir()
	seedPrograms(t, dataDir)
	first := startLauncher(t, bin, dataDir, map[string]string{"GATEWAY_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0"})
	first.running(t)
	programs := first.programs(t)
	if len(programs) != 5 {
		t.Fatalf("the launcher has %d child processes, want its 5 programs: %v", len(programs), programs)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.done

	deadline := time.Now().Add(time.Minute)
	for pid, exe := range programs {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) still runs a minute after its launcher was killed", exe, pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Started again on the very addresses of the first start: they are free.
	gateway := strings.TrimPrefix(first.gatewayURL, "http://")
	admin := strings.TrimPrefix(first.adminURL, "http://")
	second := startLauncher(t, bin, dataDir, map[string]string{"GATEWAY_ADDR": gateway, "ADMIN_ADDR": admin})
	second.running(t)
	if second.gatewayURL != first.gatewayURL || second.adminURL != first.adminURL {
		t.Fatalf("second start on %s and %s, want %s and %s", second.gatewayURL, second.adminURL, first.gatewayURL, first.adminURL)
	}
	if res := call(t, "GET", second.gatewayURL+"/v1/webhook_endpoints", second.devKey(t), nil); res.Status != http.StatusOK {
		t.Fatalf("after the restart: %d %s", res.Status, res.Raw)
	}
	second.stop(t)
}

// Two launchers with their own GATEWAY_ADDR, ADMIN_ADDR and DATA_DIR run side by side: the
// services take free ports.
func TestLaunchersSideBySide(t *testing.T) {
	t.Parallel()
	bin := buildLauncher(t)
	var ls []*launcher
	for range 2 {
		dataDir := t.TempDir()
		seedPrograms(t, dataDir)
		l := startLauncher(t, bin, dataDir, map[string]string{"GATEWAY_ADDR": freeAddr(t), "ADMIN_ADDR": freeAddr(t)})
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.running(t)
	}
	a, b := ls[0], ls[1]
	if a.gatewayURL == b.gatewayURL {
		t.Fatalf("both gateways on %s", a.gatewayURL)
	}
	for _, l := range ls {
		if res := call(t, "GET", l.gatewayURL+"/v1/webhook_endpoints", l.devKey(t), nil); res.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", l.gatewayURL, res.Status, res.Raw)
		}
	}
	// Each is a platform of its own: one's key is unknown to the other.
	if res := call(t, "GET", b.gatewayURL+"/v1/webhook_endpoints", a.devKey(t), nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("a's key on b: %d %s", res.Status, res.Raw)
	}
	for _, l := range ls {
		l.stop(t)
	}
}

// A taken GATEWAY_ADDR stops the launcher before it builds or starts anything, with a message
// naming the address and what holds it.
func TestLauncherNamesWhatHoldsItsAddress(t *testing.T) {
	t.Parallel()
	bin := buildLauncher(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dataDir := t.TempDir()
	l := startLauncher(t, bin, dataDir, map[string]string{"GATEWAY_ADDR": ln.Addr().String(), "ADMIN_ADDR": "127.0.0.1:0"})
	select {
	case <-l.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the launcher still runs with its gateway address taken")
	}
	var exit *exec.ExitError
	if !errors.As(l.err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", l.err, l.out.String())
	}
	want := fmt.Sprintf("GATEWAY_ADDR=%s is already in use by pid %d (", ln.Addr(), os.Getpid())
	if !strings.Contains(l.out.String(), want) {
		t.Fatalf("output does not say %q:\n%s", want, l.out.String())
	}
	if _, err := os.Stat(filepath.Join(dataDir, "bin")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the launcher built its programs before finding its address taken (%v)", err)
	}
}

// The README's idempotency loop, run again after a clean stop and start of `make run`: the
// retry gets the first answer, not a second endpoint.
func TestIdempotencyKeptAcrossRestart(t *testing.T) {
	t.Parallel()
	bin := buildLauncher(t)
	dataDir := t.TempDir()
	env := func() map[string]string {
		return map[string]string{"GATEWAY_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0"}
	}
	body := fmt.Sprintf(`{"url":%q,"enabled_events":[%q],"description":"readme retried"}`, publicURL, quietType)

	seedPrograms(t, dataDir)
	first := startLauncher(t, bin, dataDir, env())
	first.running(t)
	key := first.devKey(t)
	created := callRaw(t, "POST", first.gatewayURL+"/v1/webhook_endpoints", key, body, idem("readme-create-1"))
	if created.Status != http.StatusOK || created.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("create: %d %s", created.Status, created.Raw)
	}
	first.stop(t)

	second := startLauncher(t, bin, dataDir, env())
	second.running(t)
	again := callRaw(t, "POST", second.gatewayURL+"/v1/webhook_endpoints", key, body, idem("readme-create-1"))
	if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Raw) != string(created.Raw) {
		t.Fatalf("retry after the restart: %d replayed=%q\n%s\nwant the first answer\n%s",
			again.Status, again.Header.Get("Idempotent-Replayed"), again.Raw, created.Raw)
	}
	n := 0
	for _, e := range listAll(t, key, second.gatewayURL+"/v1/webhook_endpoints") {
		if e["description"] == "readme retried" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d endpoints exist, want 1", n)
	}
	second.stop(t)
	if _, err := os.Stat(filepath.Join(dataDir, "redis.json")); err != nil {
		t.Fatalf("the README says the records are kept in DATA_DIR/redis.json: %v", err)
	}
}

// freeAddr is an address on 127.0.0.1 that nothing listened on a moment ago, with a port below
// the kernel's ephemeral range. The launcher binds it only once its programs run, and they bind
// their other listeners (metrics, the services') on port 0, which the kernel takes from that
// range: a port the kernel handed out and took back a moment ago could go to one of them in
// between (seen: the gateway's public port taken by payments-svc's metrics listener).
func freeAddr(t *testing.T) string {
	t.Helper()
	lo := 32768 // Linux's default start of the range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				lo = n
			}
		}
	}
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(lo-10000))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}
