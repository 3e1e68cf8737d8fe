package main

// CPU per unit of work (issue 31, point 5): rates move with the machine, the CPU time a request,
// a delivery or a collected payment costs much less. A section samples the meter before and
// after its run and prints the difference over the units it counts, split by process: each of
// the platform's programs, the process hosting the embedded stores (stores.go), and this one,
// the load generator (with the TLS receiver, when the section runs one).

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"rentalplatform/deploy/local/stack"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ, 100 on Linux): what a
// figure is known to, per process, over the whole run measured.
const clockTick = 10 * time.Millisecond

// cpuMeter reads the CPU time of the processes that do a section's work.
type cpuMeter struct {
	procs []meteredProc
}

type meteredProc struct {
	name string
	pid  int
}

// cpuSample is the CPU time each metered process had spent at one moment, in the meter's order.
type cpuSample struct {
	at  time.Time
	cpu []time.Duration
}

// newCPUMeter meters the stack's programs as they run now (the gateway first, then the
// services in start order), the stores' process when storesPID is not 0, and this process.
func newCPUMeter(st *stack.Stack, storesPID int) *cpuMeter {
	m := &cpuMeter{}
	progs := st.Programs()
	for _, p := range progs {
		if p.Name == "gateway" {
			m.procs = append(m.procs, meteredProc{p.Name, p.PID})
		}
	}
	for _, p := range progs {
		if p.Name != "gateway" {
			m.procs = append(m.procs, meteredProc{p.Name, p.PID})
		}
	}
	if storesPID != 0 {
		m.procs = append(m.procs, meteredProc{"embedded stores", storesPID})
	}
	m.procs = append(m.procs, meteredProc{"load generator", os.Getpid()})
	return m
}

// sample reads every metered process's CPU time now.
func (m *cpuMeter) sample() cpuSample {
	s := cpuSample{at: time.Now(), cpu: make([]time.Duration, len(m.procs))}
	for i, p := range m.procs {
		s.cpu[i] = ownCPU(p.pid)
	}
	return s
}

// per is one line, "CPU per <unit>: gateway 41 µs, …, embedded stores 300 µs, load generator
// 50 µs; total 600 µs (1.4 of 2 CPUs busy)", for n units of work done since from. Every
// process's time counts, background work included (pollers, relays, the stores' upkeep): that
// is what the unit costs the machine at this rate.
func (m *cpuMeter) per(from cpuSample, n int, unit string) string {
	return m.between(from, m.sample(), n, unit)
}

// between is per for the work done from one sample to a later one.
func (m *cpuMeter) between(from, now cpuSample, n int, unit string) string {
	if n <= 0 {
		return fmt.Sprintf("CPU per %s: none done", unit)
	}
	parts := make([]string, len(m.procs))
	var total time.Duration
	for i, p := range m.procs {
		d := now.cpu[i] - from.cpu[i]
		total += d
		parts[i] = p.name + " " + perUnit(d, n)
	}
	line := fmt.Sprintf("CPU per %s: %s; total %s", unit, strings.Join(parts, ", "), perUnit(total, n))
	if wall := now.at.Sub(from.at); wall > 0 {
		line += fmt.Sprintf(" (%.2f of %d CPUs busy over %s)", total.Seconds()/wall.Seconds(), runtime.NumCPU(), wall.Round(time.Millisecond))
	}
	// A figure is known to a clock tick over the run: say so where that is not small.
	if res := clockTick / time.Duration(n); total > 0 && res*50 >= total/time.Duration(n) {
		line += fmt.Sprintf("; each figure ±%s (/proc counts 10 ms ticks; %d in all)", perUnit(clockTick, n), n)
	}
	return line
}

// share is one line, "gateway 0.4%, …; total 12% of one CPU", for the time since from: what
// the platform costs when nothing is asked of it (its pollers, relays and sweeps, the stores'
// upkeep), which every per-unit figure includes, and which is most of it at a low rate.
func (m *cpuMeter) share(from cpuSample) string {
	now := m.sample()
	wall := now.at.Sub(from.at)
	if wall <= 0 {
		return "no time measured"
	}
	pct := func(d time.Duration) string { return fmt.Sprintf("%.1f%%", 100*d.Seconds()/wall.Seconds()) }
	parts := make([]string, len(m.procs))
	var total time.Duration
	for i, p := range m.procs {
		d := now.cpu[i] - from.cpu[i]
		total += d
		parts[i] = p.name + " " + pct(d)
	}
	return fmt.Sprintf("%s; total %s of one CPU over %s", strings.Join(parts, ", "), pct(total), wall.Round(time.Millisecond))
}

// perUnit formats d spread over n units: microseconds, or milliseconds from 10 ms.
func perUnit(d time.Duration, n int) string {
	u := d / time.Duration(n)
	if u >= 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(u)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%d µs", u.Round(time.Microsecond)/time.Microsecond)
}

// ownCPU is the user and system CPU time process pid has spent, its threads together and its
// children apart (Linux /proc; 0 elsewhere, or once it has ended). Apart, because this
// process's children are the programs metered on their own (edge.go's processCPU adds them).
func ownCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces, in parentheses): utime and
	// stime are the 12th and 13th.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * clockTick
}
