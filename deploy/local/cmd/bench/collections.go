package main

// The collections benchmark (issue 13, Performance), through the gateway with a test key of an
// account of its own:
//
//	(a) N collection cases of one account (debtor countries over ten values, types alternating,
//	    one in ten paused), then the list with two filters (status=active&debtor_country=DE,
//	    the default page of 10, and a page deep into the matches) read one at a time: p50/p99
//	    against p99 ≤ 100 ms (issue 31, point 4; lists.go), with the store and the collection
//	    size.
//	(b) One 25 MiB upload, then U concurrent uploads of S MiB each (streamed through the
//	    gateway into GridFS): MiB/s over the wall time, and collections-svc's resident memory:
//	    before, and the peak while the uploads run (VmRSS sampled every 5 ms from /proc, and the
//	    kernel's high-water mark VmHWM, Linux only).
//
// Each prints the CPU time per unit (cpumeter.go): per request for the creates (and pauses)
// and the list reads, per MiB for the uploads.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
)

// caseCountries are the debtor countries the bench's cases cycle through.
var caseCountries = []string{"DE", "FR", "NL", "BE", "AT", "CH", "IT", "ES", "PL", "DK"}

func benchCollections(ctx context.Context, st *stack.Stack, cpu *cpuMeter, s settings, getenv func(string) string, stdout io.Writer) error {
	res, status, err := st.Admin(ctx, http.MethodPost, "/admin/api_keys", map[string]any{"account": "acct_benchcollections"})
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("creating the collections bench key: %d %v %v", status, res, err)
	}
	key, _ := res["secret"].(string)
	api := load.API{Base: st.GatewayURL, Key: key, Client: load.NewClient(64)}
	store := "embedded FerretDB v1.24 (SQLite)"
	if getenv("MONGODB_URI") != "" {
		store = "MongoDB at MONGODB_URI"
	}
	fmt.Fprintf(stdout, "\nCollections — %d CPUs, store: %s; through the gateway with a test key, rate limits off.\n", runtime.NumCPU(), store)
	fmt.Fprintf(stdout, "The load generator (and, embedded, the store) share this machine's CPUs; load average %s.\n", loadAverage())
	if s.collCases > 0 {
		if err := benchCaseList(ctx, api, cpu, st.RedisURL, s.collCases, stdout); err != nil {
			return fmt.Errorf("collections (a): %w", err)
		}
	}
	if s.collUploads > 0 {
		if err := benchUploads(ctx, st, api, cpu, s.collUploads, s.collUploadMiB, stdout); err != nil {
			return fmt.Errorf("collections (b): %w", err)
		}
	}
	return nil
}

func benchCaseList(ctx context.Context, api load.API, cpu *cpuMeter, redisURL string, n int, stdout io.Writer) error {
	fmt.Fprintf(stdout, "\n(a) %d collection cases of one account, then GET /v1/collection_cases?status=active&debtor_country=DE\n", n)
	start := time.Now()
	c0 := cpu.sample()
	var next, paused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				country := caseCountries[i%len(caseCountries)]
				body := fmt.Sprintf(`{"amount_to_recover":%d,"currency":"eur","due_date":"2026-01-31","creditor_reference":"INV-%d",`+
					`"debtor":{"type":%q,"name":"Debtor %d","address":{"line1":"1 Main St","city":"City","postal_code":"1000","country":%q},"country":%q}}`,
					10000+i, i, []string{"company", "private"}[i%2], i, country, country)
				raw, err := api.Call(fasthttp.MethodPost, "/v1/collection_cases", body)
				if err == nil && i%10 == 3 {
					var c struct{ ID string }
					_ = json.Unmarshal(raw, &c)
					_, err = api.Call(fasthttp.MethodPost, "/v1/collection_cases/"+c.ID+"/pause", "")
					paused.Add(1)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(stdout, "    created %d (%d paused) in %s: %.0f creates/s (16 in flight)\n", n, paused.Load(), took.Round(time.Millisecond), float64(n)/took.Seconds())
	fmt.Fprintf(stdout, "      %s\n", cpu.per(c0, n+int(paused.Load()), "request (create or pause)"))
	fmt.Fprintf(stdout, "    collection_cases: %d documents, all of this account; %d of them created to match the filter (counted as created, not read back)\n", n, matching(n))

	t0 := time.Now()
	if err := waitEventsStored(ctx, redisURL, 10*time.Minute); err != nil {
		return fmt.Errorf("waiting for the cases' events to be stored: %w", err)
	}
	fmt.Fprintf(stdout, "    their events stored by webhooks-svc %s later; the list reads a quiet platform\n", time.Since(t0).Round(time.Millisecond))

	// Matches: active (nine in ten) with country DE (one in ten).
	return benchList(ctx, api, cpu, "/v1/collection_cases?status=active&debtor_country=DE", stdout)
}

// matching counts the bench's cases that are active with debtor country DE.
func matching(n int) int {
	m := 0
	for i := range n {
		if caseCountries[i%len(caseCountries)] == "DE" && i%10 != 3 {
			m++
		}
	}
	return m
}

func benchUploads(ctx context.Context, st *stack.Stack, api load.API, cpu *cpuMeter, uploads, mib int, stdout io.Writer) error {
	pid := 0
	for _, p := range st.Programs() {
		if p.Name == "collections-svc" {
			pid = p.PID
		}
	}
	raw, err := api.Call(fasthttp.MethodPost, "/v1/collection_cases", `{"amount_to_recover":100,"currency":"eur","due_date":"2026-01-31",`+
		`"debtor":{"type":"private","name":"Upload Bench","address":{"line1":"1 St","city":"C","postal_code":"1","country":"DE"},"country":"DE"}}`)
	if err != nil {
		return err
	}
	var c struct{ ID string }
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	client := &fasthttp.Client{MaxConnsPerHost: uploads + 1, ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute}
	upload := func(body []byte, contentType string) error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(api.Base + "/v1/collection_cases/" + c.ID + "/files")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.Set("Authorization", "Bearer "+api.Key)
		req.Header.SetContentType(contentType)
		req.SetBodyRaw(body)
		if err := client.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != 200 {
			return fmt.Errorf("upload: %d %s", resp.StatusCode(), resp.Body())
		}
		return nil
	}

	fmt.Fprintf(stdout, "\n(b) uploads through the gateway into GridFS; collections-svc (pid %d) resident memory from /proc\n", pid)
	idle := load.ReadRSS(pid)
	fmt.Fprintf(stdout, "    before: VmRSS %s, VmHWM %s\n", load.MiBs(idle.RSS), load.MiBs(idle.HWM))

	for _, run := range []struct {
		name  string
		n     int
		bytes int
	}{
		{"one 25 MiB upload", 1, 25 << 20},
		{fmt.Sprintf("%d concurrent %d MiB uploads", uploads, mib), uploads, mib << 20},
	} {
		// Bodies are built before the clock starts; each a PDF by its first bytes.
		bodies := make([][]byte, run.n)
		types := make([]string, run.n) // each body has a boundary of its own
		for i := range bodies {
			file := make([]byte, run.bytes)
			copy(file, "%PDF-1.7\n")
			for j := 9; j < len(file); j += 4096 {
				file[j] = byte(i + j)
			}
			bodies[i], types[i] = load.MultipartFile(file, "bench.pdf")
		}
		runtime.GC()
		peak := &rssPeak{pid: pid}
		stopSampling := peak.sample(5 * time.Millisecond)
		start := time.Now()
		c0 := cpu.sample()
		var wg sync.WaitGroup
		errs := make([]error, run.n)
		for i := range run.n {
			wg.Go(func() { errs[i] = upload(bodies[i], types[i]) })
		}
		wg.Wait()
		took := time.Since(start)
		c1 := cpu.sample()
		stopSampling()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		after := load.ReadRSS(pid)
		total := float64(run.n*run.bytes) / (1 << 20)
		fmt.Fprintf(stdout, "    %-30s %.0f MiB in %s: %.1f MiB/s; peak VmRSS %s (sampled), VmHWM %s\n",
			run.name+":", total, took.Round(time.Millisecond), total/took.Seconds(), load.MiBs(peak.max()), load.MiBs(after.HWM))
		// The load generator's share includes sampling the service's memory every 5 ms.
		fmt.Fprintf(stdout, "      %s\n", cpu.between(c0, c1, run.n*run.bytes>>20, "MiB uploaded"))
	}
	fmt.Fprintf(stdout, "    case_file_contents: %d files uploaded to GridFS by this section (255 KiB chunks)\n", 1+uploads)
	return nil
}

// rssPeak keeps the largest VmRSS sampled.
type rssPeak struct {
	pid  int
	mu   sync.Mutex
	peak int64
}

func (p *rssPeak) sample(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if r := load.ReadRSS(p.pid).RSS; r > 0 {
				p.mu.Lock()
				p.peak = max(p.peak, r)
				p.mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func (p *rssPeak) max() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// loadAverage is the first field of /proc/loadavg ("n/a" elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
