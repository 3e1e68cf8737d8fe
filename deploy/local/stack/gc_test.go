package stack

import (
	"math"
	"runtime/debug"
	"testing"
)

// The collector is tuned only where the store is embedded and the runtime's own variables are
// not set. It changes the process: not parallel, and restored.
func TestTuneEmbeddedGC(t *testing.T) {
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })
	for _, c := range []struct {
		name           string
		env            map[string]string
		percent, limit int64
	}{
		{"embedded store", nil, embeddedGCPercent, embeddedMemoryLimit},
		{"real MongoDB", map[string]string{"MONGODB_URI": "mongodb://127.0.0.1:27017"}, 100, math.MaxInt64},
		{"GOGC set", map[string]string{"GOGC": "100"}, 100, embeddedMemoryLimit},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "8GiB"}, embeddedGCPercent, math.MaxInt64},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		TuneEmbeddedGC(func(k string) string { return c.env[k] })
		if p := debug.SetGCPercent(100); int64(p) != c.percent {
			t.Errorf("%s: GC percent %d, want %d", c.name, p, c.percent)
		}
		if l := debug.SetMemoryLimit(-1); l != c.limit {
			t.Errorf("%s: memory limit %d, want %d", c.name, l, c.limit)
		}
	}
}
