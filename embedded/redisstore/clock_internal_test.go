package redisstore

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

func TestNextStep(t *testing.T) {
	for _, c := range []struct{ cost, want time.Duration }{
		{0, minClockStep},
		{100 * time.Microsecond, minClockStep},
		{time.Millisecond, 20 * time.Millisecond},
		{30 * time.Millisecond, 600 * time.Millisecond},
		{time.Second, maxClockStep},
	} {
		if got := nextStep(c.cost); got != c.want {
			t.Errorf("nextStep(%v) = %v; want %v", c.cost, got, c.want)
		}
	}
}

// BenchmarkClockCPU prints the CPU a store spends moving its clock while it holds n keys
// (asynq's task hashes; every key is visited whether it has a TTL or not) and answers a
// command a millisecond, as asynq's pollers keep it busy.
func BenchmarkClockCPU(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s, err := Start(Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			db := s.m.DB(0)
			for i := range n {
				k := fmt.Sprintf("asynq:{payments}:t:preq_%08d:2", i)
				db.HSet(k, "msg", "x", "state", "scheduled")
				if i%2 == 0 {
					db.SetTTL(k, time.Hour)
				}
			}
			for b.Loop() {
				before := cpu()
				for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
					s.m.Exists("asynq:{payments}:scheduled")
				}
				b.ReportMetric(float64(cpu()-before)/float64(time.Second)*100, "%cpu")
			}
		})
	}
}

// cpu is the process's user and system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
