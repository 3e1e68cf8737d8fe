package app

import (
	"sync"
	"time"

	"rentalplatform/gateway/internal/domain"
)

// keyCache remembers recent authentication lookups, found and not found, for ttl. It is what
// lets one replica answer thousands of authenticated requests a second without a store round
// trip each, and its ttl is the bound on how long another replica keeps honouring a revoked
// key.
//
// Found and not-found entries have separate budgets of size entries, so a flood of random
// secrets can only evict other not-found entries, never the keys real clients use. When a
// budget is full an arbitrary entry is dropped (Go map iteration order), which costs O(1) and
// needs no bookkeeping; a dropped entry only costs one more lookup.
type keyCache struct {
	ttl  time.Duration
	size int

	mu    sync.RWMutex
	found map[domain.Hash]foundEntry
	miss  map[domain.Hash]time.Time // expiry
	// gen counts invalidations. A lookup that started before an invalidation must not store
	// what it read, since it may have read the key before it was revoked.
	gen uint64
}

type foundEntry struct {
	key     domain.Key
	expires time.Time
}

func newKeyCache(ttl time.Duration, size int) *keyCache {
	return &keyCache{ttl: ttl, size: size, found: map[domain.Hash]foundEntry{}, miss: map[domain.Hash]time.Time{}}
}

// get returns the cached answer for h: the key and whether it exists, and whether there was a
// live entry at all.
func (c *keyCache) get(h domain.Hash, now time.Time) (k domain.Key, found, hit bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.found[h]; ok && now.Before(e.expires) {
		return e.key, true, true
	}
	if exp, ok := c.miss[h]; ok && now.Before(exp) {
		return domain.Key{}, false, true
	}
	return domain.Key{}, false, false
}

func (c *keyCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put stores the answer of a lookup that began at generation gen, unless an invalidation
// happened since.
func (c *keyCache) put(h domain.Hash, k domain.Key, found bool, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	exp := now.Add(c.ttl)
	if found {
		delete(c.miss, h)
		if _, ok := c.found[h]; !ok && len(c.found) >= c.size {
			for victim := range c.found {
				delete(c.found, victim)
				break
			}
		}
		c.found[h] = foundEntry{key: k, expires: exp}
		return
	}
	delete(c.found, h)
	if _, ok := c.miss[h]; !ok && len(c.miss) >= c.size {
		for victim := range c.miss {
			delete(c.miss, victim)
			break
		}
	}
	c.miss[h] = exp
}

// invalidate forgets h and voids lookups in flight.
func (c *keyCache) invalidate(h domain.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.found, h)
	delete(c.miss, h)
}
