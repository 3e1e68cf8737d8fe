// Package fifo holds a bounded map that forgets its oldest entries first: the in-memory
// memories of recent work (documents a process wrote, events it published) that must not grow
// with the traffic.
package fifo

import (
	"sync"
	"time"
)

// Map keeps up to a fixed number of entries; putting a new key when it is full drops the key
// put longest ago. Rewriting a key keeps its place. An aged Map (NewAged) also drops the keys
// put longer ago than its age. It is safe for concurrent use; readers do not exclude each other
// (the gateway asks its block list on every request, where a plain mutex was its most
// contended lock).
type Map[K comparable, V any] struct {
	mu   sync.RWMutex
	m    map[K]entry[V]
	ring []slot[K] // slots in the order their keys were put, from head, n of them
	head int
	n    int

	maxAge time.Duration // 0: none
	now    func() time.Time
}

type entry[V any] struct {
	v    V
	slot int // where the key stands in ring
}

type slot[K comparable] struct {
	key K
	at  time.Time // when put; only for an aged Map
}

// New returns an empty Map of size entries (at least 1).
func New[K comparable, V any](size int) *Map[K, V] {
	size = max(size, 1)
	return &Map[K, V]{m: make(map[K]entry[V], size), ring: make([]slot[K], size)}
}

// NewAged returns an empty Map of size entries (at least 1) that also forgets a key maxAge
// after it was put (now tells the time; nil: time.Now). Memory that holds what was recent
// then settles at what the traffic of maxAge puts in it, instead of growing until size
// entries are held: a cache that serves work done seconds after a write need not keep hours
// of it.
func NewAged[K comparable, V any](size int, maxAge time.Duration, now func() time.Time) *Map[K, V] {
	f := New[K, V](size)
	if now == nil {
		now = time.Now
	}
	f.maxAge, f.now = maxAge, now
	return f
}

// Get returns the value of k.
func (f *Map[K, V]) Get(k K) (V, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.m[k]
	if ok && f.maxAge > 0 && f.now().Sub(f.ring[e.slot].at) > f.maxAge {
		var zero V
		return zero, false // expired; dropped by the next Put
	}
	return e.v, ok
}

// Put sets the value of k.
func (f *Map[K, V]) Put(k K, v V) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var now time.Time
	if f.maxAge > 0 {
		now = f.now()
		for f.n > 0 && now.Sub(f.ring[f.head].at) > f.maxAge {
			f.dropHead()
		}
	}
	if e, ok := f.m[k]; ok && (f.maxAge == 0 || now.Sub(f.ring[e.slot].at) <= f.maxAge) {
		f.m[k] = entry[V]{v: v, slot: e.slot}
		return
	}
	if f.n == len(f.ring) {
		f.dropHead()
	}
	i := (f.head + f.n) % len(f.ring)
	f.ring[i] = slot[K]{key: k, at: now}
	f.m[k] = entry[V]{v: v, slot: i}
	f.n++
}

// dropHead frees the oldest slot, and forgets its key unless the key stands elsewhere now (it
// was deleted and put again since).
func (f *Map[K, V]) dropHead() {
	old := f.ring[f.head]
	if e, ok := f.m[old.key]; ok && e.slot == f.head {
		delete(f.m, old.key)
	}
	f.ring[f.head] = slot[K]{}
	f.head = (f.head + 1) % len(f.ring)
	f.n--
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
	f.head, f.n = 0, 0
}

// Len is the number of entries (an aged Map's expired ones included until a Put drops them).
func (f *Map[K, V]) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.m)
}
