package main

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

func TestMinutes(t *testing.T) {
	ms := time.Millisecond
	recs := []record{
		{at: 10 * time.Second, lat: 10 * ms, svc: "payments"},
		{at: 20 * time.Second, lat: 30 * ms, svc: "payments", failed: true},
		{at: 59 * time.Second, lat: 20 * ms, svc: "collections"},
		{at: 60 * time.Second, lat: 5 * ms, svc: "webhooks"}, // the second minute's first
		{at: 119 * time.Second, lat: 7 * ms, svc: "webhooks"},
		{at: 3 * time.Minute, lat: time.Second, svc: "webhooks"}, // past the run
	}
	deliveries := []time.Duration{-time.Second, 5 * time.Second, 61 * time.Second, 62 * time.Second}
	samples := map[string][]point{
		"gateway": {{at: 0, rss: 100, goroutines: 10}, {at: 30 * time.Second, rss: 300, goroutines: 50}, {at: 50 * time.Second, rss: 200, goroutines: 20},
			{at: 65 * time.Second, rss: 400, goroutines: 30}},
	}
	rows := minutes(recs, deliveries, samples, 2, time.Minute)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	a, b := rows[0], rows[1]
	if !a.warmup || b.warmup {
		t.Errorf("warm-up: %v %v", a.warmup, b.warmup)
	}
	if a.load.requests != 3 || a.load.errors != 1 || a.load.p50 != 20*ms || a.load.p99 != 30*ms || a.load.svcP99["payments"] != 30*ms {
		t.Errorf("minute 1: %+v", a.load)
	}
	if b.load.requests != 2 || b.load.errors != 0 || b.load.p99 != 7*ms {
		t.Errorf("minute 2: %+v", b.load)
	}
	if a.deliveries != 1 || b.deliveries != 2 {
		t.Errorf("deliveries %d %d", a.deliveries, b.deliveries)
	}
	if a.rss["gateway"] != 200 || a.goroutines["gateway"] != 20 || b.rss["gateway"] != 400 {
		t.Errorf("samples: %v %v %v", a.rss, a.goroutines, b.rss)
	}
	if l := a.line([]string{"gateway"}); !strings.Contains(l, "min  1 (warm-up):      3 req    1 err (33.33%)") {
		t.Errorf("line %q", l)
	}
}

func TestChecks(t *testing.T) {
	row := func(minute int, warmup bool, errs int, p99 time.Duration, rss int64, gor int) minuteRow {
		return minuteRow{minute: minute, warmup: warmup, load: window{requests: 100, errors: errs, p99: p99},
			rss: map[string]int64{"gateway": rss, hostName: rss}, goroutines: map[string]int{"gateway": gor, hostName: -1}}
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name        string
		rows        []minuteRow
		undelivered int
		want        map[string]bool
	}{
		{"steady", []minuteRow{row(1, true, 0, 900*ms, 50, 10), row(2, false, 0, 20*ms, 100, 20), row(3, false, 0, 30*ms, 109, 21)}, 0,
			map[string]bool{"errors": true, "p99 stable": true, "RSS flat gateway": true, "RSS flat " + hostName: true, "goroutines flat gateway": true}},
		{"errors in the warm-up count", []minuteRow{row(1, true, 1, 20*ms, 100, 20), row(2, false, 0, 20*ms, 100, 20)}, 0,
			map[string]bool{"errors": false, "p99 stable": true}},
		{"an event not delivered", []minuteRow{row(1, true, 0, 20*ms, 100, 20), row(2, false, 0, 20*ms, 100, 20)}, 1,
			map[string]bool{"errors": false}},
		{"p99 grew", []minuteRow{row(1, true, 0, 20*ms, 100, 20), row(2, false, 0, 20*ms, 100, 20), row(3, false, 0, 31*ms, 100, 20)}, 0,
			map[string]bool{"p99 stable": false}},
		{"memory and goroutines grew 10 %", []minuteRow{row(1, true, 0, 20*ms, 100, 20), row(2, false, 0, 20*ms, 100, 20), row(3, false, 0, 20*ms, 110, 22)}, 0,
			map[string]bool{"RSS flat gateway": false, "goroutines flat gateway": false}},
		{"no minute after the warm-up", []minuteRow{row(1, true, 0, 20*ms, 100, 20)}, 0,
			map[string]bool{"errors": true, "after warm-up": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]bool{}
			for _, c := range checks(tc.rows, tc.undelivered) {
				got[c.name] = c.pass
				if c.info != (c.name == "RSS flat "+hostName) {
					t.Errorf("%s: info %v", c.name, c.info)
				}
			}
			if _, ok := got["goroutines flat "+hostName]; ok {
				t.Errorf("the host's goroutines are checked")
			}
			for name, pass := range tc.want {
				if p, ok := got[name]; !ok || p != pass {
					t.Errorf("%s: got %v (present %v), want %v; all %v", name, p, ok, pass, got)
				}
			}
		})
	}
}

func TestParseGoroutines(t *testing.T) {
	for text, want := range map[string]int{
		"# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 42\n": 42,
		"go_goroutines_other 3\ngo_goroutines{service_name=\"gw\"} 7\n":          7,
		"go_threads 9\n": -1,
	} {
		if got := parseGoroutines(bufio.NewScanner(strings.NewReader(text))); got != want {
			t.Errorf("%q: %d, want %d", text, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"-duration", "3m", "-warmup", "1m"}, true},
		{[]string{"-duration", "90s"}, false},
		{[]string{"-duration", "2m", "-warmup", "2m"}, false},
		{[]string{"-warmup", "30s"}, false},
		{[]string{"-rate", "-1"}, false},
	} {
		_, err := parse(tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
}
