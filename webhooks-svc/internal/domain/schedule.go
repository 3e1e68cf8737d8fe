package domain

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultSchedule is the retry schedule of docs/events.md: about three days in all.
const DefaultSchedule = "5s,5m,30m,2h,5h,10h,14h,20h,24h"

// MaxScheduleLen bounds how many retries a schedule may hold.
const MaxScheduleLen = 50

// JitterFraction is how far a scheduled delay may move either way, so deliveries that failed
// together do not all come back at the same instant.
const JitterFraction = 0.1

// Schedule is the delays before each retry after a failed attempt: the first failure waits
// Schedule[0], the second Schedule[1], and the failure after the last retry is final.
type Schedule []time.Duration

// ParseSchedule reads comma-separated Go durations ("5s,5m,30m"), each positive.
func ParseSchedule(s string) (Schedule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty retry schedule")
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxScheduleLen {
		return nil, fmt.Errorf("at most %d retries, got %d", MaxScheduleLen, len(parts))
	}
	out := make(Schedule, len(parts))
	for i, p := range parts {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("retry %d: %q is not a positive duration like 5s or 2h", i+1, strings.TrimSpace(p))
		}
		out[i] = d
	}
	return out, nil
}

// Max returns the longest delay of the schedule.
func (s Schedule) Max() time.Duration {
	var m time.Duration
	for _, d := range s {
		m = max(m, d)
	}
	return m
}

// Next returns the delay before the retry that follows the given number of failed attempts
// (1 after the first failure), or false when the schedule is used up. retryAfter, when the
// receiver asked for one, replaces the scheduled delay, bounded by the schedule's longest one;
// it is honoured as given, without jitter. rnd is a random number in [0, 1).
func (s Schedule) Next(failures int, retryAfter *time.Duration, rnd float64) (time.Duration, bool) {
	if failures < 1 || failures > len(s) {
		return 0, false
	}
	if retryAfter != nil {
		return min(max(*retryAfter, 0), s.Max()), true
	}
	return Jitter(s[failures-1], rnd), true
}

// Jitter moves d by up to ±JitterFraction; rnd in [0, 1) picks where.
func Jitter(d time.Duration, rnd float64) time.Duration {
	return time.Duration(float64(d) * (1 - JitterFraction + 2*JitterFraction*rnd))
}
