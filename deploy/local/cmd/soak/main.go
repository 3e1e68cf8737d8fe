// Command soak starts the platform as `make run` does (embedded stores unless MONGODB_URI /
// REDIS_URL are set) and puts a steady mixed load through the gateway for a long time (10
// minutes by default): verification sessions, collection cases with file uploads, payment
// agreements and requests, event lists, each created, listed and cancelled or closed, by a few
// test-mode accounts whose webhook endpoints (all events) point at a local TLS receiver. The
// load is open-loop at a fixed rate, by default half the capacity measured in a short ramp
// first. Every minute it prints requests, errors, latency, deliveries and every program's RSS
// and goroutines; at the end it checks the targets (no error, every event delivered, p99 and
// memory flat after the warm-up), prints PASS/FAIL for each, writes plots and exits 1 if any
// failed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
)

// errFailed is a run that went through and missed a target.
var errFailed = errors.New("a target was missed")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// As make run does: this process hosts the embedded store.
	stack.TuneEmbeddedGC(os.Getenv)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

type settings struct {
	duration, warmup, drain time.Duration
	rate, accounts          int
	out                     string
	pprof                   string
}

func parse(args []string) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.DurationVar(&s.duration, "duration", 10*time.Minute, "how long the load runs, warm-up included (whole minutes)")
	fs.DurationVar(&s.warmup, "warmup", time.Minute, "the first part of the run, left out of the stability targets (whole minutes)")
	fs.IntVar(&s.rate, "rate", 0, "requests/s of the load; 0: half the capacity measured in a ramp before the run")
	fs.IntVar(&s.accounts, "accounts", 3, "test-mode accounts the load is spread over")
	fs.DurationVar(&s.drain, "drain", 2*time.Minute, "how long to wait after the load for the last events' deliveries")
	fs.StringVar(&s.out, "out", filepath.Join("bin", "soak"), "folder the plots are written to")
	fs.StringVar(&s.pprof, "pprof", "", "serve this process's Go profiles (it hosts the embedded stores) at http://ADDR/debug/pprof/, such as 127.0.0.1:6061; empty: none")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	switch {
	case s.duration < time.Minute || s.duration%time.Minute != 0:
		return s, fmt.Errorf("-duration %s: want whole minutes, at least 1m", s.duration)
	case s.warmup < 0 || s.warmup%time.Minute != 0 || s.warmup >= s.duration:
		return s, fmt.Errorf("-warmup %s: want whole minutes, shorter than -duration", s.warmup)
	case s.rate < 0 || s.accounts < 1:
		return s, fmt.Errorf("-rate %d, -accounts %d: want ≥ 0 and ≥ 1", s.rate, s.accounts)
	}
	return s, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	s, err := parse(args)
	if err != nil {
		return err
	}
	out, err := filepath.Abs(s.out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if s.pprof != "" {
		stopProfiles, err := serveProfiles(s.pprof, stdout)
		if err != nil {
			return err
		}
		defer stopProfiles()
	}
	p, err := load.StartPlatform(ctx, "soak", getenv, nil, stdout)
	if err != nil {
		return err
	}
	defer p.Stop()
	st := p.Stack

	rcv := startReceiver()
	defer rcv.close()
	client := load.NewClient(512)
	accounts, err := setupAccounts(ctx, st, rcv, client, s.accounts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d CPUs; %s; Redis: %s. %d test-mode accounts, each with a webhook endpoint for every event at %s.\n",
		runtime.NumCPU(), storeDesc(getenv), redisDesc(getenv), len(accounts), rcv.url())

	d := &driver{accounts: accounts}
	rate := s.rate
	if rate == 0 {
		capacity := d.capacity(ctx, stdout)
		rate = max(1, capacity/2)
		fmt.Fprintf(stdout, "Rate: %d req/s, half the measured capacity (%d req/s).\n", rate, capacity)
	} else {
		fmt.Fprintf(stdout, "Rate: %d req/s (-rate).\n", rate)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	programs := st.Programs()
	start := time.Now()
	smp := newSampler(programs, start)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { smp.run(sampleCtx, 5*time.Second) })
	names := smp.names()
	fmt.Fprintf(stdout, "Soak: %s at %d req/s (warm-up %s) from %s; per minute, RSS/goroutines of: %v\n",
		s.duration, rate, s.warmup, start.Format(time.TimeOnly), names)

	n := int(s.duration / time.Minute)
	inflight := make([]atomic.Int64, n)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for m := range n {
			end := start.Add(time.Duration(m+1) * time.Minute)
			// Printed once the minute's requests have all answered (or 35 s after it ended);
			// the summary counts late answers anyway.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(end.Add(time.Second))):
			}
			for inflight[m].Load() > 0 && time.Since(end) < 35*time.Second && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
			rows := minutes(d.recordsSince(start), rcv.deliveries(start), smp.snapshot(), m+1, s.warmup)
			fmt.Fprintln(stdout, rows[m].line(names))
		}
	}()
	d.drive(ctx, start, rate, s.duration, func(at time.Duration, delta int64) {
		if m := int(at / time.Minute); m < n {
			inflight[m].Add(delta)
		}
	})
	<-printed
	if ctx.Err() != nil {
		stopSampling()
		return ctx.Err()
	}

	// Every event of the accounts since their endpoint was created must reach the receiver.
	fmt.Fprintf(stdout, "Load stopped; waiting up to %s for the last deliveries...\n", s.drain)
	time.Sleep(10 * time.Second) // the last payment attempts' events are raised in the background
	var want []string
	for _, a := range accounts {
		ids, err := eventsSince(a)
		if err != nil {
			stopSampling()
			return fmt.Errorf("listing the events of %s: %w", a.name, err)
		}
		want = append(want, ids...)
	}
	var missing []string
	_ = load.Poll(ctx, s.drain, time.Second, func() (bool, error) {
		missing = rcv.missing(want)
		return len(missing) == 0, nil
	})
	stopSampling()
	wg.Wait()
	fmt.Fprintf(stdout, "Deliveries: %d events raised, %d delivered to the receiver, %d not delivered", len(want), len(want)-len(missing), len(missing))
	if len(missing) > 0 {
		fmt.Fprintf(stdout, " (first: %s)", missing[0])
	}
	fmt.Fprintln(stdout)

	recs := d.recordsSince(start)
	samples := smp.snapshot()
	rows := minutes(recs, rcv.deliveries(start), samples, n, s.warmup)
	after := aggregate(recs, s.warmup, s.duration)
	fmt.Fprintf(stdout, "\nSummary after the warm-up: %d requests, %d errors (%.3f%%), p50 %s, p99 %s\n",
		after.requests, after.errors, 100*after.errorRate(), msShort(after.p50), msShort(after.p99))
	if first := d.firstError(); first != "" {
		fmt.Fprintf(stdout, "First error: %s\n", first)
	}
	failed := false
	for _, c := range checks(rows, len(missing)) {
		fmt.Fprintln(stdout, c)
		failed = failed || (!c.pass && !c.info)
	}
	fmt.Fprintf(stdout, "(%s is this process: the embedded stores, the load and the receiver; its RSS is shown, not a target, its goroutines not counted.)\n", hostName)
	paths, err := writePlots(out, recs, samples, names, s.duration, s.warmup)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Plots:")
	for _, p := range paths {
		fmt.Fprintln(stdout, "  "+p)
	}
	if failed {
		return errFailed
	}
	return nil
}

func storeDesc(getenv func(string) string) string {
	if getenv("MONGODB_URI") != "" {
		return "store: MongoDB at MONGODB_URI"
	}
	return "store: embedded FerretDB v1.24 (SQLite), in this process"
}

func redisDesc(getenv func(string) string) string {
	if getenv("REDIS_URL") != "" {
		return "REDIS_URL"
	}
	return "embedded miniredis, in this process"
}

// driver sends the mix.
type driver struct {
	accounts []*account
	seq      atomic.Int64 // the mix's position, carried from the ramp into the soak

	mu       sync.Mutex
	runs     map[time.Time][]record // by the start of the run (a ramp step, the soak)
	firstErr string
}

// drive sends rate requests a second for d on a fixed schedule from start, each measured from
// its scheduled time (open loop: a stall shows as latency, not as fewer requests), and waits
// for the last answer. track is told when a request starts (+1) and ends (-1).
func (d *driver) drive(ctx context.Context, start time.Time, rate int, dur time.Duration, track func(at time.Duration, delta int64)) {
	interval := time.Second / time.Duration(rate)
	n := int(dur / interval)
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		at := time.Duration(i) * interval
		if w := time.Until(start.Add(at)); w > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(w):
			}
		}
		k := d.seq.Add(1) - 1
		a := d.accounts[int(k)%len(d.accounts)]
		st := mix[int(k/int64(len(d.accounts)))%len(mix)]
		track(at, 1)
		wg.Go(func() {
			defer track(at, -1)
			err := st.run(a)
			d.add(start, record{at: at, lat: time.Since(start.Add(at)), svc: st.svc, failed: err != nil}, err)
		})
	}
	wg.Wait()
}

func (d *driver) add(start time.Time, r record, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runs == nil {
		d.runs = map[time.Time][]record{}
	}
	d.runs[start] = append(d.runs[start], r)
	if err != nil && d.firstErr == "" {
		d.firstErr = fmt.Sprintf("%.300v", err)
	}
}

// recordsSince returns the records of the run that started at start.
func (d *driver) recordsSince(start time.Time) []record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.runs[start])
}

func (d *driver) firstError() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.firstErr
}

// Capacity ramp: steps of rampStep at doubling rates from rampFrom; the capacity is the
// highest rate whose step had no error and a p99 within rampP99.
const (
	rampFrom = 10
	rampStep = 5 * time.Second
	rampMax  = 2560
	rampP99  = 250 * time.Millisecond
)

func (d *driver) capacity(ctx context.Context, stdout io.Writer) int {
	fmt.Fprintf(stdout, "Measuring capacity: the mix at doubling rates from %d req/s, %s each, until p99 > %s or an error:\n", rampFrom, rampStep, rampP99)
	good := 0
	for rate := rampFrom; rate <= rampMax && ctx.Err() == nil; rate *= 2 {
		start := time.Now()
		d.drive(ctx, start, rate, rampStep, func(time.Duration, int64) {})
		w := aggregate(d.recordsSince(start), 0, rampStep)
		fmt.Fprintf(stdout, "  %5d req/s: %d requests, %d errors, p50 %s, p99 %s\n", rate, w.requests, w.errors, msShort(w.p50), msShort(w.p99))
		if w.errors > 0 || w.p99 > rampP99 {
			break
		}
		good = rate
	}
	if good == 0 {
		fmt.Fprintf(stdout, "  even %d req/s missed the bound; the soak runs at the lowest rate\n", rampFrom)
		return 2
	}
	return good
}

// setupAccounts makes the accounts: a key each, a webhook endpoint for every event at the
// receiver, the two agreements its payment requests are made against, and the marker (the
// newest event before the load).
func setupAccounts(ctx context.Context, st *stack.Stack, rcv *receiver, client *fasthttp.Client, n int) ([]*account, error) {
	body, ctype := load.MultipartFile(append([]byte("%PDF-1.7\n"), make([]byte, 4<<10)...), "soak.pdf")
	var out []*account
	for i := range n {
		name := fmt.Sprintf("acct_soak%d", i+1)
		key, err := load.NewKey(ctx, st, name)
		if err != nil {
			return nil, err
		}
		a := &account{name: name, api: load.API{Base: st.GatewayURL, Key: key, Client: client}, upload: body, uploadType: ctype}
		if _, err := a.api.CreateEndpoint(rcv.url()+"/"+name, "*"); err != nil {
			return nil, err
		}
		if a.paySuccess, err = a.create("/v1/payment_agreements", agreementBody("tok_test_success")); err != nil {
			return nil, err
		}
		if a.payFailing, err = a.create("/v1/payment_agreements", agreementBody("tok_test_insufficient_funds")); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	// The marker is read once the setup's events are stored, so none of them counts twice.
	time.Sleep(2 * time.Second)
	for _, a := range out {
		ids, err := a.eventPage("")
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			a.marker = ids[0]
		}
	}
	return out, nil
}

// eventsSince lists the account's events newer than its marker.
func eventsSince(a *account) ([]string, error) {
	var all []string
	after := ""
	for {
		ids, err := a.eventPage(after)
		if err != nil {
			return nil, err
		}
		if i := slices.Index(ids, a.marker); i >= 0 && a.marker != "" {
			return append(all, ids[:i]...), nil
		}
		all = append(all, ids...)
		if len(ids) < 100 {
			return all, nil
		}
		after = ids[len(ids)-1]
	}
}

// eventPage lists one page of 100 of the account's events, newest first, after the id given
// (none: the newest), and returns their ids.
func (a *account) eventPage(after string) ([]string, error) {
	path := "/v1/events?limit=100"
	if after != "" {
		path += "&starting_after=" + after
	}
	raw, err := a.api.Call(fasthttp.MethodGet, path, "")
	if err != nil {
		return nil, err
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	ids := make([]string, len(page.Data))
	for i, e := range page.Data {
		ids[i] = e.ID
	}
	return ids, nil
}
