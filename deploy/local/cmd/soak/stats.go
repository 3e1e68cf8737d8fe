package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"rentalplatform/deploy/local/internal/load"
)

// record is one request of the soak: when it was scheduled (since the soak's start), how long
// it took from then (open loop: a stall counts), the service it was for and whether it failed
// (a transport error, or a status the mix did not expect).
type record struct {
	at, lat time.Duration
	svc     string
	failed  bool
}

// services are the services the mix reaches, in the order figures are printed.
var services = []string{"verification", "collections", "payments", "webhooks"}

// window is what the requests scheduled in one stretch of time came to.
type window struct {
	requests, errors int
	p50, p99         time.Duration
	svcP99           map[string]time.Duration
}

// errorRate is the share of the window's requests that failed.
func (w window) errorRate() float64 {
	if w.requests == 0 {
		return 0
	}
	return float64(w.errors) / float64(w.requests)
}

// aggregate sums up the records scheduled in [from, to).
func aggregate(recs []record, from, to time.Duration) window {
	w := window{svcP99: map[string]time.Duration{}}
	var all []time.Duration
	per := map[string][]time.Duration{}
	for _, r := range recs {
		if r.at < from || r.at >= to {
			continue
		}
		w.requests++
		if r.failed {
			w.errors++
		}
		all = append(all, r.lat)
		per[r.svc] = append(per[r.svc], r.lat)
	}
	slices.Sort(all)
	w.p50, w.p99 = load.Pct(all, 50), load.Pct(all, 99)
	for svc, l := range per {
		slices.Sort(l)
		w.svcP99[svc] = load.Pct(l, 99)
	}
	return w
}

// point is one sample of a program's resident memory (bytes) and goroutines (-1: not known).
type point struct {
	at         time.Duration
	rss        int64
	goroutines int
}

// minuteRow is one printed minute: its requests, the deliveries that arrived in it, and the
// median of each program's samples taken in it (a median: one sample can catch a burst of
// requests in flight).
type minuteRow struct {
	minute     int // 1, 2, …
	warmup     bool
	load       window
	deliveries int
	rss        map[string]int64
	goroutines map[string]int // -1: not known
}

// minutes builds the rows of the first n whole minutes.
func minutes(recs []record, deliveries []time.Duration, samples map[string][]point, n int, warmup time.Duration) []minuteRow {
	rows := make([]minuteRow, n)
	for i := range rows {
		from, to := time.Duration(i)*time.Minute, time.Duration(i+1)*time.Minute
		row := minuteRow{minute: i + 1, warmup: to <= warmup, load: aggregate(recs, from, to),
			rss: map[string]int64{}, goroutines: map[string]int{}}
		for _, d := range deliveries {
			if d >= from && d < to {
				row.deliveries++
			}
		}
		for prog, pts := range samples {
			var rss []int64
			var gor []int
			for _, p := range pts {
				if p.at >= from && p.at < to {
					rss = append(rss, p.rss)
					gor = append(gor, p.goroutines)
				}
			}
			row.rss[prog] = median(rss)
			row.goroutines[prog] = median(gor)
		}
		rows[i] = row
	}
	return rows
}

func median[T int | int64](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// line is the minute as printed: requests, errors, latency, deliveries, then each program's
// RSS (MiB) / goroutines.
func (m minuteRow) line(programs []string) string {
	var b strings.Builder
	tag := ""
	if m.warmup {
		tag = " (warm-up)"
	}
	fmt.Fprintf(&b, "min %2d%s: %6d req  %3d err (%.2f%%)  p50 %s  p99 %s  [p99", m.minute, tag,
		m.load.requests, m.load.errors, 100*m.load.errorRate(), msShort(m.load.p50), msShort(m.load.p99))
	for _, s := range services {
		fmt.Fprintf(&b, " %s %s", s[:4], msShort(m.load.svcP99[s]))
	}
	fmt.Fprintf(&b, "]  %5d deliveries |", m.deliveries)
	for _, p := range programs {
		g := "?"
		if n := m.goroutines[p]; n >= 0 {
			g = fmt.Sprint(n)
		}
		fmt.Fprintf(&b, " %s %.0fMiB/%s", p, float64(m.rss[p])/(1<<20), g)
	}
	return b.String()
}

func msShort(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// check is one target, passed or not, with the figures it was decided on.
type check struct {
	name   string
	pass   bool
	detail string
	// info marks a figure printed beside the targets but not one of them: the soak's own
	// process, whose heap holds the load generator's and the embedded store's garbage at
	// GOGC 400 (stack.TuneEmbeddedGC), so its RSS swings by tens of MiB between collections.
	info bool
}

func (c check) String() string {
	verdict := "FAIL"
	if c.info {
		verdict = "INFO"
	} else if c.pass {
		verdict = "PASS"
	}
	return fmt.Sprintf("%s  %s: %s", verdict, c.name, c.detail)
}

// Targets of the soak (issue 29 §2).
const (
	maxP99Ratio = 1.5  // p99 of the last minute over the first after warm-up
	maxGrowth   = 0.10 // RSS and goroutines, last minute over the first after warm-up
)

// checks decides the targets: no error over the whole run (requests, and events not delivered
// by the end), the last minute's p99 within maxP99Ratio of the first after warm-up, and each
// program's RSS and goroutines grown less than maxGrowth from the first minute after warm-up to
// the last. Goroutines are checked for the programs whose count is known (goroutines ≥ 0); the
// soak's own process (hostName) is reported, not checked (check.info).
func checks(rows []minuteRow, undelivered int) []check {
	var out []check
	errs, reqs := 0, 0
	for _, r := range rows {
		errs += r.load.errors
		reqs += r.load.requests
	}
	out = append(out, check{name: "errors", pass: errs == 0 && undelivered == 0,
		detail: fmt.Sprintf("%d of %d requests failed, %d events not delivered (target 0)", errs, reqs, undelivered)})
	first := -1
	for i, r := range rows {
		if !r.warmup {
			first = i
			break
		}
	}
	if first < 0 {
		return append(out, check{name: "after warm-up", detail: "no whole minute after the warm-up to compare"})
	}
	a, z := rows[first], rows[len(rows)-1]
	ratio := 0.0
	if a.load.p99 > 0 {
		ratio = float64(z.load.p99) / float64(a.load.p99)
	}
	out = append(out, check{name: "p99 stable", pass: a.load.p99 > 0 && ratio <= maxP99Ratio,
		detail: fmt.Sprintf("minute %d %s, minute %d %s: ×%.2f (target ≤ ×%.1f)", a.minute, msShort(a.load.p99), z.minute, msShort(z.load.p99), ratio, maxP99Ratio)})
	var progs []string
	for p := range a.rss {
		progs = append(progs, p)
	}
	sort.Strings(progs)
	for _, p := range progs {
		g := growth(float64(a.rss[p]), float64(z.rss[p]))
		out = append(out, check{name: "RSS flat " + p, pass: a.rss[p] > 0 && g < maxGrowth,
			detail: fmt.Sprintf("%s → %s: %+.1f%% (target < %+.0f%%)", load.MiBs(a.rss[p]), load.MiBs(z.rss[p]), 100*g, 100*maxGrowth),
			info:   p == hostName})
	}
	for _, p := range progs {
		if a.goroutines[p] < 0 || z.goroutines[p] < 0 {
			continue
		}
		g := growth(float64(a.goroutines[p]), float64(z.goroutines[p]))
		out = append(out, check{name: "goroutines flat " + p, pass: a.goroutines[p] > 0 && g < maxGrowth,
			detail: fmt.Sprintf("%d → %d: %+.1f%% (target < %+.0f%%)", a.goroutines[p], z.goroutines[p], 100*g, 100*maxGrowth)})
	}
	return out
}

func growth(from, to float64) float64 {
	if from == 0 {
		return 0
	}
	return to/from - 1
}
