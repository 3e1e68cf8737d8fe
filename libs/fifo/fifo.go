// Package fifo holds a bounded map that forgets its oldest entries first: the in-memory
// memories of recent work (documents a process wrote, events it published) that must not grow
// with the traffic.
package fifo

import "sync"

// Map keeps up to a fixed number of entries; putting a new key when it is full drops the key
// put longest ago. Rewriting a key keeps its place. It is safe for concurrent use; readers do
// not exclude each other (the gateway asks its block list on every request, where a plain
// mutex was its most contended lock).
type Map[K comparable, V any] struct {
	mu   sync.RWMutex
	m    map[K]entry[V]
	ring []slot[K]
	next int
}

type entry[V any] struct {
	v    V
	slot int // where the key stands in ring
}

type slot[K comparable] struct {
	key  K
	used bool
}

// New returns an empty Map of size entries (at least 1).
func New[K comparable, V any](size int) *Map[K, V] {
	size = max(size, 1)
	return &Map[K, V]{m: make(map[K]entry[V], size), ring: make([]slot[K], size)}
}

// Get returns the value of k.
func (f *Map[K, V]) Get(k K) (V, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.m[k]
	return e.v, ok
}

// Put sets the value of k.
func (f *Map[K, V]) Put(k K, v V) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[k]; ok {
		f.m[k] = entry[V]{v: v, slot: e.slot}
		return
	}
	if old := f.ring[f.next]; old.used {
		// The slot's key may have been deleted and put again since, in another slot.
		if e, ok := f.m[old.key]; ok && e.slot == f.next {
			delete(f.m, old.key)
		}
	}
	f.ring[f.next] = slot[K]{key: k, used: true}
	f.m[k] = entry[V]{v: v, slot: f.next}
	f.next = (f.next + 1) % len(f.ring)
}

// Delete forgets k.
func (f *Map[K, V]) Delete(k K) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, k)
}

// Clear forgets everything.
func (f *Map[K, V]) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.m)
	clear(f.ring)
	f.next = 0
}

// Len is the number of entries.
func (f *Map[K, V]) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.m)
}
