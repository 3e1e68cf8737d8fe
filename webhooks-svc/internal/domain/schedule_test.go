package domain

import (
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	def, err := ParseSchedule(DefaultSchedule)
	if err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, d := range def {
		total += d
	}
	if len(def) != 9 || def[0] != 5*time.Second || def[8] != 24*time.Hour || total < 75*time.Hour || total > 80*time.Hour {
		t.Fatalf("default schedule %v (total %s): want 9 retries over about three days", def, total)
	}
	for in, want := range map[string]Schedule{
		"1s,2s,3s":        {time.Second, 2 * time.Second, 3 * time.Second},
		" 100ms , 1m30s ": {100 * time.Millisecond, 90 * time.Second},
		"24h":             {24 * time.Hour},
		"5s,5s":           {5 * time.Second, 5 * time.Second},
	} {
		got, err := ParseSchedule(in)
		if err != nil || len(got) != len(want) {
			t.Errorf("ParseSchedule(%q) = %v, %v", in, got, err)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("ParseSchedule(%q) = %v, want %v", in, got, want)
			}
		}
	}
	for _, bad := range []string{"", " ", "5", "5s,", ",5s", "5s,,5s", "-1s", "0s", "1s,0", "soon", strings.Repeat("1s,", 50) + "1s"} {
		if got, err := ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) = %v, want an error", bad, got)
		}
	}
}

func TestScheduleNext(t *testing.T) {
	s := Schedule{time.Second, time.Minute, time.Hour}
	for failures, want := range map[int]time.Duration{1: time.Second, 2: time.Minute, 3: time.Hour} {
		if got, ok := s.Next(failures, nil, 0.5); !ok || got != want {
			t.Errorf("Next(%d) = %v, %v; want %v (rnd 0.5 is no jitter)", failures, got, ok, want)
		}
	}
	for _, failures := range []int{0, 4, 10} {
		if _, ok := s.Next(failures, nil, 0.5); ok {
			t.Errorf("Next(%d) has a retry", failures)
		}
	}
	// Retry-After replaces the delay, unjittered, bounded by the longest delay, never negative.
	for _, tc := range []struct{ after, want time.Duration }{
		{10 * time.Second, 10 * time.Second}, {0, 0}, {-time.Second, 0}, {48 * time.Hour, time.Hour},
	} {
		if got, ok := s.Next(1, &tc.after, 0.99); !ok || got != tc.want {
			t.Errorf("Next with Retry-After %v = %v, want %v", tc.after, got, tc.want)
		}
	}
	// Retry-After does not extend the schedule.
	after := time.Second
	if _, ok := s.Next(4, &after, 0); ok {
		t.Error("Retry-After added a retry")
	}
}

func TestJitterBounds(t *testing.T) {
	d := 10 * time.Second
	lo, hi := Jitter(d, 0), Jitter(d, 0.9999999)
	if lo != 9*time.Second || hi < 10999*time.Millisecond || hi > 11*time.Second {
		t.Fatalf("jitter range [%v, %v], want [9s, 11s)", lo, hi)
	}
	for i := range 1000 {
		r := float64(i) / 1000
		if j := Jitter(d, r); j < 9*time.Second || j >= 11*time.Second {
			t.Fatalf("Jitter(%v, %v) = %v out of ±10%%", d, r, j)
		}
	}
	if Jitter(d, 0.5) != d {
		t.Fatal("rnd 0.5 should not move the delay")
	}
}
