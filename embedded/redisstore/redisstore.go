// Package redisstore runs an in-process Redis (miniredis) for `make run` and
// tests, on machines where no Redis server is installed.
//
// Unlike plain miniredis, keys with a TTL expire in real time, so code that
// relies on expiry (rate-limit windows, locks, asynq leases) behaves as it
// does against Redis.
package redisstore

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// Options configures Start.
type Options struct {
	// Addr is the TCP listen address; "127.0.0.1:0" (a free port) if empty.
	Addr string
}

// Store is a running miniredis server.
type Store struct {
	m *miniredis.Miniredis
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
	// (miniredis >= v2.40) makes them follow time.Now() instead: on every
	// command, before touching a database, miniredis advances all TTLs by the
	// wall time elapsed since the last command and drops the expired keys.
	// Expiry is therefore lazy but exact: no command ever sees a key past
	// its deadline, and no ticker goroutine is needed.
	m.ClockTTL(true)
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("redisstore: start miniredis on %s: %w", addr, err)
	}
	return &Store{m: m}, nil
}

// URL returns the redis:// URL of database 0, e.g. "redis://127.0.0.1:40123/0".
func (s *Store) URL() string { return "redis://" + s.m.Addr() + "/0" }

// Close stops the server and closes all client connections. Data is lost.
func (s *Store) Close() { s.m.Close() }

// Commands returns how many commands the server has executed, for measuring what a workload
// costs Redis.
func (s *Store) Commands() int { return s.m.CommandCount() }
