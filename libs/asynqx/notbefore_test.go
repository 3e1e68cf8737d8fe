package asynqx

import (
	"testing"
	"time"
)

func TestNotBeforeNeverRunsEarly(t *testing.T) {
	for _, at := range []time.Time{
		time.Unix(100, 0), time.Unix(100, 1), time.Unix(100, 900_000_000), time.Unix(100, 999_999_999),
	} {
		got := NotBefore(at)
		// asynq truncates to the second: the truncated schedule must not be before at.
		if time.Unix(got.Unix(), 0).Before(at) {
			t.Errorf("NotBefore(%v) = %v runs early once truncated", at, got)
		}
		if got.Sub(at) >= time.Second {
			t.Errorf("NotBefore(%v) = %v delays a full second or more", at, got)
		}
	}
}
