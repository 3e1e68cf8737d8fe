package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"rentalplatform/gateway/internal/domain"
)

// usageQueue is how many last_used writes may wait. When the writer falls behind, further
// writes are dropped: last_used is advisory and the next use a minute later tries again.
const usageQueue = 1024

// usageRecorder writes a key's last_used at most once per interval per replica, from its own
// goroutine, so authentication never waits on a write.
type usageRecorder struct {
	keys     domain.KeyRepository
	log      *slog.Logger
	interval time.Duration
	queue    chan usage

	mu      sync.Mutex
	written map[string]time.Time // key id -> when its last_used was last queued
}

type usage struct {
	id string
	at time.Time
}

func newUsageRecorder(keys domain.KeyRepository, log *slog.Logger, interval time.Duration) *usageRecorder {
	return &usageRecorder{keys: keys, log: log, interval: interval,
		queue: make(chan usage, usageQueue), written: map[string]time.Time{}}
}

// seen notes a successful authentication of key id at now.
func (u *usageRecorder) seen(id string, now time.Time) {
	u.mu.Lock()
	last, ok := u.written[id]
	if ok && now.Sub(last) < u.interval {
		u.mu.Unlock()
		return
	}
	u.written[id] = now
	u.mu.Unlock()
	select {
	case u.queue <- usage{id: id, at: now}:
	default:
	}
}

// Run writes last_used until ctx ends, then flushes what is queued within a short budget. It
// returns nil: a failed write is logged and forgotten.
func (s *Service) Run(ctx context.Context) error {
	u := s.usage
	prune := time.NewTicker(u.interval)
	defer prune.Stop()
	for {
		select {
		case x := <-u.queue:
			u.write(ctx, x)
		case now := <-prune.C:
			u.prune(now)
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			for {
				select {
				case x := <-u.queue:
					u.write(flush, x)
				default:
					return nil
				}
			}
		}
	}
}

func (u *usageRecorder) write(ctx context.Context, x usage) {
	if err := u.keys.TouchLastUsed(ctx, x.id, x.at); err != nil {
		u.log.WarnContext(ctx, "recording api key last_used failed", "error", err.Error())
	}
}

// prune forgets keys not written for an interval, which bounds the map by the keys in use.
func (u *usageRecorder) prune(now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, t := range u.written {
		if now.Sub(t) >= u.interval {
			delete(u.written, id)
		}
	}
}
