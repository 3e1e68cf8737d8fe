package main

import (
	"fmt"
	"time"
)

// A throughput run offers a fixed rate for a while. Its deliveries divided by the time until
// the last one arrived is always below the offered rate, by the last delivery's latency, so it
// cannot tell whether the platform keeps up. What says so is the backlog: the deliveries owed
// (those of every update answered so far) less those arrived. The run samples both as it goes;
// over its last two thirds (the first third lets the pipeline fill), a platform that keeps up
// delivers at the offered rate and its backlog does not grow, while one that does not delivers
// at its capacity and the backlog grows by the difference.

// flowSample is what stood at one instant of a run.
type flowSample struct {
	at      time.Duration // since the run's start
	owed    int           // deliveries of the updates answered so far
	arrived int           // deliveries arrived so far
}

func (s flowSample) backlog() int { return s.owed - s.arrived }

// steadyFlow is a run's last two thirds.
type steadyFlow struct {
	from, to flowSample
}

// steadyWindow returns the samples that open and close the last two thirds of a run of d: the
// first at or after d/3 and the last at or before d. It reports false when the run left no
// such pair.
func steadyWindow(samples []flowSample, d time.Duration) (steadyFlow, bool) {
	var w steadyFlow
	found := false
	for _, s := range samples {
		if s.at >= d/3 && !found {
			w.from, found = s, true
		}
		if s.at <= d {
			w.to = s
		}
	}
	return w, found && w.to.at > w.from.at
}

// rate is the deliveries arrived per second within the window.
func (w steadyFlow) rate() float64 {
	return float64(w.to.arrived-w.from.arrived) / (w.to.at - w.from.at).Seconds()
}

// growth is how much the backlog grew within the window (negative: it shrank).
func (w steadyFlow) growth() int { return w.to.backlog() - w.from.backlog() }

func (w steadyFlow) String() string {
	verdict := "not growing"
	if w.growth() > 0 {
		verdict = fmt.Sprintf("growing by %.0f/s", float64(w.growth())/(w.to.at-w.from.at).Seconds())
	}
	return fmt.Sprintf("%.0f deliveries/s from %s to %s, backlog %d → %d (%s)",
		w.rate(), w.from.at.Round(100*time.Millisecond), w.to.at.Round(100*time.Millisecond), w.from.backlog(), w.to.backlog(), verdict)
}
