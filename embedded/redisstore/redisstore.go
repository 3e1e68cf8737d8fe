// Package redisstore runs an in-process Redis (miniredis) for `make run` and
// tests, on machines where no Redis server is installed.
//
// Unlike plain miniredis, keys with a TTL expire in real time (within
// one clock step), so code that relies on expiry (rate-limit windows, locks, asynq
// leases) behaves as it does against Redis.
//
// The data lives in memory. Save and Restore keep chosen keys, with their
// expiries, in a file across a stop and a start (snapshot.go).
package redisstore

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// The store's clock moves in steps. miniredis advances TTLs by visiting (and sorting) every
// key each time its clock has moved when a command arrives; following the wall clock, that is
// every command, and under a backlog of queued tasks it took most of a core and grew with the
// backlog (docs/architecture.md, "The embedded Redis"). Moving the clock in steps bounds that
// work to once per step; keys expire, and TIME advances, at most one step late.
//
// A step is minClockStep, longer when the store holds so many keys that an advance costs more
// than 1/clockBudget of the step (judged on the cheapest of the last costWindow advances) (100,000 queued tasks take tens of milliseconds to visit): the
// clock then uses at most about 5% of a core whatever the store holds, and expiry gets coarser
// only while the store is that large.
const (
	minClockStep = 5 * time.Millisecond
	maxClockStep = time.Second
	clockBudget  = 20
)

// costWindow is how many advances the step is judged on: the cheapest of them. An advance
// also measures whatever delayed it (a Lua script holding the store's lock, a CPU taken by
// other processes), which comes and goes; what the keys cost is there every time.
const costWindow = 8

// nextStep is the step after advances whose cheapest took cost.
func nextStep(cost time.Duration) time.Duration {
	return min(max(cost*clockBudget, minClockStep), maxClockStep)
}

// Options configures Start.
type Options struct {
	// Addr is the TCP listen address; "127.0.0.1:0" (a free port) if empty.
	Addr string
}

// Store is a running miniredis server.
type Store struct {
	m    *miniredis.Miniredis
	stop chan struct{}
	wg   sync.WaitGroup
}

// Start starts miniredis listening on opts.Addr. The listener is bound when
// Start returns, so the URL is usable immediately.
func Start(opts Options) (*Store, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	m := miniredis.NewMiniRedis()
	// miniredis only decrements TTLs on FastForward by default. ClockTTL
	// (miniredis >= v2.40) makes them follow its clock instead: on every
	// command, before touching a database, miniredis advances all TTLs by the
	// clock time elapsed since the last command and drops the expired keys.
	// The clock is set to the wall clock every step (tick).
	m.SetTime(time.Now())
	m.ClockTTL(true)
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("redisstore: start miniredis on %s: %w", addr, err)
	}
	s := &Store{m: m, stop: make(chan struct{})}
	s.wg.Add(1)
	go s.tick()
	return s, nil
}

// tick moves the store's clock to the wall clock every step until Close, and advances the
// TTLs then (rather than on the next command, which would pay for it) to measure the step.
func (s *Store) tick() {
	defer s.wg.Done()
	t := time.NewTimer(minClockStep)
	defer t.Stop()
	var costs [costWindow]time.Duration
	for i := 0; ; i++ {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// The wall clock now, not the timer's time: a tick delivered late under CPU
			// contention carries a stale time, and a clock behind makes keys set meanwhile
			// expire early by as much.
			begin := time.Now()
			s.m.SetTime(begin)
			s.m.DB(0) // any database access advances the TTLs of all of them
			costs[i%costWindow] = time.Since(begin)
			t.Reset(nextStep(slices.Min(costs[:])))
		}
	}
}

// URL returns the redis:// URL of database 0, e.g. "redis://127.0.0.1:40123/0".
func (s *Store) URL() string { return "redis://" + s.m.Addr() + "/0" }

// Close stops the server and closes all client connections. Data not Saved is lost.
func (s *Store) Close() {
	close(s.stop)
	s.wg.Wait()
	s.m.Close()
}

// Commands returns how many commands the server has executed, for measuring what a workload
// costs Redis.
func (s *Store) Commands() int { return s.m.CommandCount() }
