package main

// The edge comparison (issues 16 and 31): the same authenticated GET answered by a stub
// service directly, through nginx proxying, through a bare Fiber proxy, through nginx and
// HAProxy configured as API gateways (peers.go) and through the gateway with the settings a
// production user runs, measured with wrk in one sitting, rounds alternated.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
)

// stubBody is what the stub service answers: a webhook endpoint's size and shape.
const stubBody = `{"id":"we_01h0000000000000000000000","object":"webhook_endpoint","url":"https://example.com/hook","status":"enabled","enabled_events":["*"],"livemode":false,"created":1700000000}`

// serveMode runs the bench binary as one of the edge comparison's servers (started by
// benchEdge as a process of its own, so its CPU is its own): "stub ADDR" or
// "fiberproxy ADDR UPSTREAM". It reports whether args asked for one.
func serveMode(args []string) (bool, error) {
	if len(args) < 2 || (args[0] != "serve-stub" && args[0] != "serve-fiberproxy") {
		return false, nil
	}
	ln, err := net.Listen("tcp", args[1])
	if err != nil {
		return true, err
	}
	switch args[0] {
	case "serve-stub":
		body := []byte(stubBody)
		return true, (&fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.SetContentType("application/json")
			ctx.SetBody(body)
		}}).Serve(ln)
	default:
		if len(args) < 3 {
			return true, errors.New("serve-fiberproxy ADDR UPSTREAM")
		}
		return true, bareFiberProxy(args[2]).Listener(ln)
	}
}

// bareFiberProxy is the floor a Fiber gateway can reach: no middleware, one pooled
// fasthttp.HostClient, the path, query and a few headers forwarded, status, type and body back.
func bareFiberProxy(upstream string) *fiber.App {
	client := &fasthttp.HostClient{Addr: upstream, MaxConns: 512}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		out, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(out)
		defer fasthttp.ReleaseResponse(resp)
		in := c.Request()
		out.Header.SetMethodBytes(in.Header.Method())
		out.SetRequestURIBytes(in.Header.RequestURI())
		out.SetHost(upstream)
		if v := in.Header.ContentType(); len(v) > 0 {
			out.Header.SetContentTypeBytes(v)
		}
		out.SetBody(in.Body())
		if err := client.Do(out, resp); err != nil {
			return fiber.ErrBadGateway
		}
		c.Status(resp.StatusCode())
		c.Response().Header.SetContentTypeBytes(resp.Header.ContentType())
		c.Response().SetBody(resp.Body())
		return nil
	})
	return app
}

// The peer gateways' names in the edge comparison.
const (
	peerNginx   = "nginx as a gateway → stub"
	peerHAProxy = "HAProxy as a gateway → stub"
)

// edgeTarget is one server measured, and the processes whose CPU it spends.
type edgeTarget struct {
	name string
	url  string
	pid  int // with its child processes (nginx's workers)
}

type edgeResult struct {
	rate     float64
	p50, p99 time.Duration
	cpuPerRq time.Duration
	errors   int // non2xx + socket
	non2xx   int // answers other than 2xx and 3xx
	socket   int // wrk's socket errors: connect, read, write, timeout
}

func benchEdge(ctx context.Context, st *stack.Stack, s settings, root, dataDir string, logOut io.Writer, stdout io.Writer) error {
	wrk, nginx, haproxy, err := edgeTools(ctx, stdout)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			stopGroup(p)
		}
	}()
	start := func(path string, env []string, args ...string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, logOut, logOut
		ownGroup(cmd)
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		procs = append(procs, cmd)
		return cmd, nil
	}
	// startPiped starts cmd with its standard output going through a pipe, as a container's
	// does, copied to log by this process: writing the file is the collector's work, not the
	// program's.
	startPiped := func(cmd *exec.Cmd, log, stderr io.Writer) error {
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		go func() { _, _ = io.Copy(log, out) }()
		cmd.Stderr = stderr
		ownGroup(cmd)
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		return nil
	}

	stubAddr, fiberAddr, nginxAddr, gwAddr := freeAddr(), freeAddr(), freeAddr(), freeAddr()
	stub, err := start(self, nil, "serve-stub", stubAddr)
	if err != nil {
		return err
	}
	fiberProxy, err := start(self, nil, "serve-fiberproxy", fiberAddr, stubAddr)
	if err != nil {
		return err
	}
	ngxDir := filepath.Join(dataDir, "nginx")
	if err := writeNginxConf(ngxDir, nginxAddr, stubAddr); err != nil {
		return err
	}
	ngx, err := start(nginx, nil, "-p", ngxDir, "-c", filepath.Join(ngxDir, "nginx.conf"), "-e", filepath.Join(ngxDir, "error.log"))
	if err != nil {
		return fmt.Errorf("nginx: %w", err)
	}

	// The peer gateways (peers/): nginx and HAProxy doing a gateway's job with the dev key.
	keys := []peerKey{{Secret: st.DevAPIKey, Account: "acct_dev"}}
	ngxGwAddr, hapAddr := freeAddr(), freeAddr()
	ngxGw := newPeerSettings(filepath.Join(dataDir, "nginx-gateway"), ngxGwAddr, stubAddr, keys)
	ngxGwConf, err := writePeerConfig("nginx-gateway.conf", ngxGw)
	if err != nil {
		return err
	}
	ngxGateway, err := start(nginx, nil, "-p", ngxGw.Dir, "-c", ngxGwConf, "-e", filepath.Join(ngxGw.Dir, "error.log"))
	if err != nil {
		return fmt.Errorf("nginx as a gateway: %w", err)
	}
	hap := newPeerSettings(filepath.Join(dataDir, "haproxy-gateway"), hapAddr, stubAddr, keys)
	hapConf, err := writePeerConfig("haproxy-gateway.cfg", hap)
	if err != nil {
		return err
	}
	if err := writeHAProxyKeys(hap); err != nil {
		return err
	}
	hapLog, err := os.Create(filepath.Join(hap.Dir, "access.log"))
	if err != nil {
		return err
	}
	defer hapLog.Close()
	// -db: in the foreground, its log lines on standard output, as the gateway's are.
	haproxyCmd := exec.CommandContext(ctx, haproxy, "-db", "-f", hapConf)
	if err := startPiped(haproxyCmd, hapLog, logOut); err != nil {
		return fmt.Errorf("haproxy: %w", err)
	}

	// The gateway as production runs it: authentication, a 1 % parent-based sampler exporting
	// over OTLP (to a sink here), rate limits on (far above the load), the failed-
	// authentication limit on, metrics on, info access logs (to a file).
	sink, err := otlpSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	gwLog, err := os.Create(filepath.Join(dataDir, "edge-gateway.log"))
	if err != nil {
		return err
	}
	defer gwLog.Close()
	stubURL := "http://" + stubAddr
	gwMetrics := freeAddr() // the measured gateway's: its profile (-edge-profile)
	startGateway := func(bin, addr string, extra []string) (*exec.Cmd, error) {
		metrics := freeAddr()
		if addr == gwAddr {
			metrics = gwMetrics
		}
		env := []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
			"GATEWAY_ADDR=" + addr, "ADMIN_ADDR=" + freeAddr(), "METRICS_ADDR=" + metrics,
			"PROFILES_ENABLED=" + strconv.FormatBool(s.edgeProfile != ""),
			"ADMIN_TOKEN=admin_" + randomToken(), "INTERNAL_AUTH_SECRET=" + st.InternalAuthSecret,
			"MONGODB_URI=" + st.MongoURI, "MONGODB_DATABASE=" + st.DatabasePrefix + "gateway", "REDIS_URL=" + st.RedisURL,
			"VERIFICATION_URL=" + stubURL, "COLLECTIONS_URL=" + stubURL, "PAYMENTS_URL=" + stubURL, "WEBHOOKS_URL=" + stubURL,
			"GATEWAY_RATE_LIMIT_TEST=1000000", "GATEWAY_RATE_LIMIT_LIVE=1000000", "GATEWAY_AUTH_FAILURE_LIMIT=60",
			"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.01",
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "LOG_LEVEL=" + s.edgeLogLevel,
		}
		env = append(env, extra...) // the last of a repeated key wins (os/exec)
		gw := exec.CommandContext(ctx, bin)
		gw.Env = env
		if err := startPiped(gw, gwLog, gwLog); err != nil {
			return nil, err
		}
		return gw, nil
	}
	gwBin := filepath.Join(dataDir, "bin", "gateway")
	gw, err := startGateway(gwBin, gwAddr, nil)
	if err != nil {
		return err
	}
	var ref *exec.Cmd
	refAddr := freeAddr()
	refBin, refName := s.edgeRefGateway, s.edgeRefGateway
	if refBin == "" && len(s.edgeRefEnv) > 0 {
		refBin, refName = gwBin, "this build"
	}
	if len(s.edgeRefEnv) > 0 {
		refName += " with " + strings.Join(s.edgeRefEnv, " ")
	}
	if refBin != "" {
		if ref, err = startGateway(refBin, refAddr, s.edgeRefEnv); err != nil {
			return fmt.Errorf("the reference gateway: %w", err)
		}
	}

	path := "/v1/webhook_endpoints/we_01h0000000000000000000000"
	ready := []string{"http://" + stubAddr + "/healthz", "http://" + fiberAddr + "/healthz", "http://" + nginxAddr + "/healthz",
		"http://" + ngxGwAddr + "/healthz", "http://" + hapAddr + "/healthz", "http://" + gwAddr + "/readyz"}
	if ref != nil {
		ready = append(ready, "http://"+refAddr+"/readyz")
	}
	for _, u := range ready {
		if err := waitHTTP(ctx, u); err != nil {
			return fmt.Errorf("edge bench: %w (logs in %s and %s)", err, gwLog.Name(), ngxDir)
		}
	}
	ngxGwTarget := edgeTarget{name: peerNginx, url: "http://" + ngxGwAddr + path, pid: ngxGateway.Process.Pid}
	hapTarget := edgeTarget{name: peerHAProxy, url: "http://" + hapAddr + path, pid: haproxyCmd.Process.Pid}
	gwTarget := edgeTarget{name: "gateway → stub", url: "http://" + gwAddr + path, pid: gw.Process.Pid}
	targets := []edgeTarget{
		{name: "stub direct", url: "http://" + stubAddr + path, pid: stub.Process.Pid},
		{name: "nginx → stub", url: "http://" + nginxAddr + path, pid: ngx.Process.Pid},
		{name: "bare Fiber proxy → stub", url: "http://" + fiberAddr + path, pid: fiberProxy.Process.Pid},
		ngxGwTarget, hapTarget, gwTarget,
	}
	for _, t := range []edgeTarget{ngxGwTarget, hapTarget, gwTarget} {
		if err := checkGatewayJob(ctx, t.name, t.url, st.DevAPIKey); err != nil {
			return fmt.Errorf("edge bench: %w (configurations in %s and %s)", err, ngxGw.Dir, hap.Dir)
		}
	}
	if ref != nil {
		targets = append(targets, edgeTarget{name: "reference gateway → stub", url: "http://" + refAddr + path, pid: ref.Process.Pid})
	}
	auth := "Authorization: Bearer " + st.DevAPIKey
	if r, err := runWrk(ctx, wrk, gwTarget, auth, 64, time.Second); err != nil || r.errors > 0 {
		return fmt.Errorf("edge bench: the gateway does not answer 200 (%v, %d errors); its log is %s", err, r.errors, gwLog.Name())
	}

	fmt.Fprintf(stdout, "\nThe edge: GET /v1/webhook_endpoints/:id answered by a stub service, %d CPUs, wrk -t2 -c%d -d%s, %d rounds\n",
		runtime.NumCPU(), s.concurrency, s.duration, s.rounds)
	fmt.Fprintf(stdout, "alternated (each round runs every target once, in turn). The gateway runs with production settings:\n")
	fmt.Fprintf(stdout, "authentication, parentbased_traceidratio 0.01 (exported over OTLP), rate limits on (above the load),\n")
	fmt.Fprintf(stdout, "failed-authentication limit on, metrics on, LOG_LEVEL=%s (info: one access log line per request, to a\n", s.edgeLogLevel)
	fmt.Fprintf(stdout, "pipe). The peer gateways (configurations in deploy/local/cmd/bench/peers/) do the same job: the bearer\n")
	fmt.Fprintf(stdout, "key looked up (401 without a known one), a per-key rate limit above the load, a request id to the service\n")
	fmt.Fprintf(stdout, "and back, an access log line per request (nginx: to a file; HAProxy: to a pipe). CPU is the server's own\n")
	fmt.Fprintf(stdout, "(nginx: master and workers), not the stub's; wrk shares the machine.\n")
	all := map[string][]edgeResult{}
	for _, t := range targets { // warm up every server once
		if _, err := runWrk(ctx, wrk, t, auth, s.concurrency, 2*time.Second); err != nil {
			return err
		}
	}
	for round := 1; round <= s.rounds; round++ {
		fmt.Fprintf(stdout, "  round %d:\n", round)
		for _, t := range targets {
			var profiled <-chan error
			if round == 1 && t == gwTarget && s.edgeProfile != "" {
				profiled = cpuProfileOf(ctx, "http://"+gwMetrics, s.duration-2*time.Second, s.edgeProfile)
			}
			r, err := runWrk(ctx, wrk, t, auth, s.concurrency, s.duration)
			if err != nil {
				return err
			}
			if profiled != nil {
				if err := <-profiled; err != nil {
					return err
				}
				fmt.Fprintf(stdout, "    (a CPU profile of the gateway during this run: go tool pprof -top %s)\n", s.edgeProfile)
			}
			all[t.name] = append(all[t.name], r)
			fmt.Fprintf(stdout, "    %-31s %s\n", t.name, r)
		}
	}
	med := map[string]edgeResult{}
	fmt.Fprintf(stdout, "  medians of %d rounds:\n", s.rounds)
	for _, t := range targets {
		med[t.name] = median(all[t.name])
		fmt.Fprintf(stdout, "    %-31s %s\n", t.name, med[t.name])
	}
	g, n, f := med[gwTarget.name], med["nginx → stub"], med["bare Fiber proxy → stub"]
	// The target is against the faster of the two peer gateways, by median requests/s.
	peer := peerNginx
	if med[peerHAProxy].rate > med[peerNginx].rate {
		peer = peerHAProxy
	}
	p := med[peer]
	fmt.Fprintf(stdout, "  gateway / the faster peer gateway (%s):\n", peer)
	fmt.Fprintf(stdout, "                              req/s %.2f× (target ≥ 1.0), p99 %.2f× (target ≤ 1.0), CPU per request %.2f×\n",
		g.rate/p.rate, float64(g.p99)/float64(p.p99), float64(g.cpuPerRq)/float64(p.cpuPerRq))
	for _, name := range []string{peerNginx, peerHAProxy} {
		o := med[name]
		fmt.Fprintf(stdout, "  gateway / %-17s req/s %.2f×, p99 %.2f×, CPU per request %.2f×\n", strings.TrimSuffix(name, " → stub")+":",
			g.rate/o.rate, float64(g.p99)/float64(o.p99), float64(g.cpuPerRq)/float64(o.cpuPerRq))
	}
	fmt.Fprintf(stdout, "  gateway / nginx proxying:   req/s %.2f×, p99 %.2f×, CPU per request %.2f× (no gateway work: the floor of any edge)\n",
		g.rate/n.rate, float64(g.p99)/float64(n.p99), float64(g.cpuPerRq)/float64(n.cpuPerRq))
	fmt.Fprintf(stdout, "  gateway / bare Fiber proxy: req/s %.2f×, p99 %.2f×, CPU per request %.2f× (the floor of this design)\n",
		g.rate/f.rate, float64(g.p99)/float64(f.p99), float64(g.cpuPerRq)/float64(f.cpuPerRq))
	// What a Fiber gateway could reach at best: the bare proxy does none of the gateway's work.
	fmt.Fprintf(stdout, "  bare Fiber proxy / the faster peer gateway: req/s %.2f×, p99 %.2f× (the most a Fiber gateway reaches here with every feature free)\n",
		f.rate/p.rate, float64(f.p99)/float64(p.p99))
	if r, ok := med["reference gateway → stub"]; ok {
		fmt.Fprintf(stdout, "  gateway / reference (%s): req/s %.2f×, p99 %.2f×, CPU per request %.2f×\n",
			refName, g.rate/r.rate, float64(g.p99)/float64(r.p99), float64(g.cpuPerRq)/float64(r.cpuPerRq))
	}
	return chainAllocs(ctx, root, stdout)
}

func (r edgeResult) String() string {
	e := ""
	if r.errors > 0 {
		e = fmt.Sprintf("  ERRORS: %d non-2xx, %d socket (wrk: connect, read, write, timeout)", r.non2xx, r.socket)
	}
	return fmt.Sprintf("%8.0f req/s  p50 %7s  p99 %7s  CPU %5.1f µs/req%s", r.rate, load.Ms(r.p50), load.Ms(r.p99), float64(r.cpuPerRq)/float64(time.Microsecond), e)
}

// median takes each figure's median on its own.
func median(rs []edgeResult) edgeResult {
	pick := func(f func(edgeResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return edgeResult{
		rate:     pick(func(r edgeResult) float64 { return r.rate }),
		p50:      time.Duration(pick(func(r edgeResult) float64 { return float64(r.p50) })),
		p99:      time.Duration(pick(func(r edgeResult) float64 { return float64(r.p99) })),
		cpuPerRq: time.Duration(pick(func(r edgeResult) float64 { return float64(r.cpuPerRq) })),
		errors:   int(pick(func(r edgeResult) float64 { return float64(r.errors) })),
		non2xx:   int(pick(func(r edgeResult) float64 { return float64(r.non2xx) })),
		socket:   int(pick(func(r edgeResult) float64 { return float64(r.socket) })),
	}
}

var (
	wrkRate     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkTotal    = regexp.MustCompile(`(\d+) requests in`)
	wrkPercent  = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocketEr = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// runWrk loads t for d and reads wrk's report, and the CPU t's processes spent meanwhile.
func runWrk(ctx context.Context, wrk string, t edgeTarget, header string, conns int, d time.Duration) (edgeResult, error) {
	cpu0 := processCPU(t.pid)
	cmd := exec.CommandContext(ctx, wrk, "-t2", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()))+"s", "--latency", "-H", header, t.url)
	out, err := cmd.CombinedOutput()
	cpu := processCPU(t.pid) - cpu0
	if err != nil {
		return edgeResult{}, fmt.Errorf("wrk %s: %w\n%s", t.name, err, out)
	}
	text := string(out)
	var r edgeResult
	if m := wrkRate.FindStringSubmatch(text); m != nil {
		r.rate, _ = strconv.ParseFloat(m[1], 64)
	}
	for _, m := range wrkPercent.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[m[3]]
		if m[1] == "50" {
			r.p50 = time.Duration(v * float64(unit))
		} else {
			r.p99 = time.Duration(v * float64(unit))
		}
	}
	if m := wrkNon2xx.FindStringSubmatch(text); m != nil {
		r.non2xx, _ = strconv.Atoi(m[1])
	}
	if m := wrkSocketEr.FindStringSubmatch(text); m != nil {
		for _, v := range m[1:] {
			n, _ := strconv.Atoi(v)
			r.socket += n
		}
	}
	r.errors = r.non2xx + r.socket
	if m := wrkTotal.FindStringSubmatch(text); m != nil {
		if n, _ := strconv.Atoi(m[1]); n > 0 {
			r.cpuPerRq = cpu / time.Duration(n)
		}
	}
	if r.rate == 0 {
		return r, fmt.Errorf("wrk %s: no Requests/sec in\n%s", t.name, text)
	}
	return r, nil
}

// processCPU is the user and system CPU time pid and its children have spent (Linux /proc):
// nginx's master and its workers together.
func processCPU(pid int) time.Duration {
	total := ownCPU(pid)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				total += ownCPU(c)
			}
		}
	}
	return total
}

// edgeTools finds wrk, nginx and HAProxy, installing them with apt (Debian's wrk, nginx-light
// and haproxy) when missing.
func edgeTools(ctx context.Context, stdout io.Writer) (wrk, nginx, haproxy string, err error) {
	find := func() {
		wrk, _ = exec.LookPath("wrk")
		nginx, haproxy = sbin("nginx"), sbin("haproxy")
	}
	if find(); wrk != "" && nginx != "" && haproxy != "" {
		return wrk, nginx, haproxy, nil
	}
	const pkgs = "wrk nginx-light haproxy"
	fmt.Fprintf(stdout, "Installing %s with apt-get (the edge comparison needs them)...\n", pkgs)
	install := func() error {
		out, err := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "-q"}, strings.Fields(pkgs)...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	if err := install(); err != nil {
		if out, uerr := exec.CommandContext(ctx, "apt-get", "update", "-q").CombinedOutput(); uerr != nil {
			return "", "", "", fmt.Errorf("apt-get update: %w: %s", uerr, out)
		}
		if err := install(); err != nil {
			return "", "", "", fmt.Errorf("installing %s (run as root, or install them yourself): %w", pkgs, err)
		}
	}
	if find(); wrk == "" || nginx == "" || haproxy == "" {
		return "", "", "", fmt.Errorf("one of %s still not found after installing them", pkgs)
	}
	return wrk, nginx, haproxy, nil
}

// sbin finds a server program on PATH or in /usr/sbin (not on every user's PATH).
func sbin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/" + name); err == nil {
		return "/usr/sbin/" + name
	}
	return ""
}

// writeNginxConf writes an nginx configuration proxying addr to upstream with keep-alive
// connections, no access log, one worker per CPU: nginx as a reverse proxy is usually run.
func writeNginxConf(dir, addr, upstream string) error {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf(`daemon off;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream stub { server %[3]s; keepalive 128; }
  server {
    listen %[2]s;
    location / {
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, dir, addr, upstream)
	return os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
}

// cpuProfileOf takes a CPU profile of d from a program's metrics listener (PROFILES_ENABLED)
// starting a second from now, inside the run it is taken during, and writes it to path.
func cpuProfileOf(ctx context.Context, metricsURL string, d time.Duration, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			time.Sleep(time.Second)
			url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", metricsURL, max(1, int(d.Seconds())))
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("profile: %w", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("profile: %s answered %d", url, resp.StatusCode)
			}
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, resp.Body); err != nil {
				f.Close()
				return fmt.Errorf("profile: %w", err)
			}
			return f.Close()
		}()
	}()
	return done
}

// otlpSink accepts OTLP/HTTP trace exports and drops them.
func otlpSink() (*httpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &httpSink{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

type httpSink struct {
	URL string
	srv *http.Server
}

func (s *httpSink) Close() { _ = s.srv.Close() }

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// waitHTTP waits up to 60 s for url to answer 200.
func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering 200 within 60s (%v)", url, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// chainAllocs runs the handler-chain benchmark and prints its allocations per request.
func chainAllocs(ctx context.Context, root string, stdout io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "PublicChain", "-benchmem", "-benchtime", "20000x", "./gateway/internal/ports/http/")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go test -bench PublicChain: %w\n%s", err, out)
	}
	fmt.Fprintf(stdout, "  the public handler chain in one process (go test -bench PublicChain ./gateway/internal/ports/http/; target ≤ 10 allocs/op):\n")
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "Benchmark") {
			fmt.Fprintf(stdout, "    %s\n", strings.Join(strings.Fields(line), " "))
		}
	}
	return nil
}

// ownGroup makes cmd, once started, lead a process group of its own, killed whole when the
// context ends and stopped whole by stopGroup: killing nginx's master alone leaves its workers
// running, orphaned and busy, which then load every later measurement.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// stopGroup ends the process group cmd leads (ownGroup): SIGTERM (nginx's fast shutdown, which ends its
// workers too), then SIGKILL for whatever is left after 5 s.
func stopGroup(cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-done
}
