package main

import (
	"testing"
	"time"
)

func TestSteadyWindow(t *testing.T) {
	s := func(ms, owed, arrived int) flowSample {
		return flowSample{at: time.Duration(ms) * time.Millisecond, owed: owed, arrived: arrived}
	}
	for _, tc := range []struct {
		name    string
		samples []flowSample
		ok      bool
		rate    float64
		growth  int
	}{
		{"keeps up: the offered rate, the backlog flat", []flowSample{s(0, 0, 0), s(1000, 3000, 1500), s(2000, 6000, 4500), s(3000, 9000, 7500)}, true, 3000, 0},
		{"saturated: its capacity, the backlog growing", []flowSample{s(0, 0, 0), s(1000, 3000, 1000), s(2000, 6000, 3000), s(3000, 9000, 5000)}, true, 2000, 2000},
		{"catching up: above the offered rate", []flowSample{s(0, 0, 0), s(1000, 3000, 0), s(3000, 9000, 8000)}, true, 4000, -2000},
		{"samples after the run are left out", []flowSample{s(1000, 3000, 1500), s(3000, 9000, 7500), s(3500, 9000, 9000)}, true, 3000, 0},
		{"no sample in the last two thirds", []flowSample{s(0, 0, 0), s(500, 1500, 0)}, false, 0, 0},
		{"one sample only", []flowSample{s(2000, 6000, 4500)}, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := steadyWindow(tc.samples, 3*time.Second)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, w)
			}
			if !ok {
				return
			}
			if w.rate() != tc.rate || w.growth() != tc.growth {
				t.Fatalf("rate %v, growth %d; want %v, %d (%s)", w.rate(), w.growth(), tc.rate, tc.growth, w)
			}
		})
	}
}
