package docstore

import (
	"context"
	"sync"
	"time"

	"rentalplatform/libs/fifo"
)

// ReadModel keeps a collection's documents in memory by scope (such as an account and mode),
// for a hot path that reads every document of a scope again and again: webhooks-svc's fan-out
// of every event asks which of an account's endpoints are subscribed, and every attempt needs
// its endpoint's URL and secrets. Asking the store each time costs a query per event and a read
// per attempt; on the embedded store such a query is a scan of the whole collection.
//
// A scope is read from the store (load) when it is older than ttl, so a change made by another
// process is seen within ttl. A document this process's collection writes is applied to the
// read model as it is stored (the collection tells it), so it is seen at once. Entries carry
// their document version and the newer one always wins, so a load that raced a write cannot
// bring back the older state; a document this process deleted stays as a deleted entry
// (Meta.Deleted) until a load no longer returns it. Documents are kept without their outbox.
type ReadModel[T any, K comparable] struct {
	load    func(context.Context, K) ([]T, error)
	scopeOf func(*T) K
	ttl     time.Duration
	now     func() time.Time

	mu      sync.Mutex
	byScope *fifo.Map[K, *scopeModel[T]] // the scopes used last, a bounded number
}

type scopeModel[T any] struct {
	loaded  time.Time              // zero until the first load completes
	loading chan struct{}          // closed when the load in progress ends; nil if none
	docs    map[string]modelDoc[T] // by id
}

type modelDoc[T any] struct {
	doc   T
	putAt time.Time
}

// NewReadModel keeps c's documents by scope (scopeOf), at most scopes of them (the ones used
// last), each read by load when older than ttl.
func NewReadModel[T any, K comparable](c *Collection[T], ttl time.Duration, scopes int,
	scopeOf func(*T) K, load func(context.Context, K) ([]T, error)) *ReadModel[T, K] {
	m := &ReadModel[T, K]{load: load, scopeOf: scopeOf, ttl: ttl, now: c.opts.Now, byScope: fifo.New[K, *scopeModel[T]](scopes)}
	c.watch(m.put)
	return m
}

// Get returns the scope's documents (deleted ones this process wrote included), reading them
// from the store first if the scope is missing or older than ttl. Concurrent callers share one
// load.
func (m *ReadModel[T, K]) Get(ctx context.Context, k K) ([]T, error) {
	sc, err := m.fresh(ctx, k)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]T, 0, len(sc.docs))
	for _, e := range sc.docs {
		out = append(out, e.doc)
	}
	return out, nil
}

// Find returns the scope's document with the id (a deleted one this process wrote included)
// and whether the scope holds it, as Get would, without copying the rest of the scope: every
// delivery attempt looks up its endpoint, and an account can have hundreds.
func (m *ReadModel[T, K]) Find(ctx context.Context, k K, id string) (T, bool, error) {
	sc, err := m.fresh(ctx, k)
	if err != nil {
		var zero T
		return zero, false, err
	}
	defer m.mu.Unlock()
	e, ok := sc.docs[id]
	return e.doc, ok, nil
}

// fresh returns the scope, loaded within ttl, with m.mu held (on success only).
func (m *ReadModel[T, K]) fresh(ctx context.Context, k K) (*scopeModel[T], error) {
	for {
		m.mu.Lock()
		sc, ok := m.byScope.Get(k)
		if !ok {
			sc = &scopeModel[T]{docs: map[string]modelDoc[T]{}}
			m.byScope.Put(k, sc)
		}
		if !sc.loaded.IsZero() && m.now().Sub(sc.loaded) < m.ttl {
			return sc, nil
		}
		if wait := sc.loading; wait != nil {
			m.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err := m.refresh(ctx, k, sc); err != nil {
			return nil, err
		}
	}
}

// refresh loads a scope (whose loading it marks; m.mu is held on entry, released on return)
// and merges what this process wrote meanwhile.
func (m *ReadModel[T, K]) refresh(ctx context.Context, k K, sc *scopeModel[T]) error {
	done := make(chan struct{})
	sc.loading = done
	m.mu.Unlock()

	start := m.now()
	docs, err := m.load(ctx, k)

	m.mu.Lock()
	defer m.mu.Unlock()
	sc.loading = nil
	close(done)
	if err != nil {
		return err
	}
	fresh := make(map[string]modelDoc[T], len(docs))
	for _, d := range docs {
		fresh[metaOf(&d).ID] = modelDoc[T]{doc: bare(d), putAt: start}
	}
	// Writes this process made while the load ran, or that the load could not see yet, win
	// over what was read.
	for id, e := range sc.docs {
		if f, ok := fresh[id]; ok && metaOf(&f.doc).Version >= metaOf(&e.doc).Version {
			continue
		}
		if _, ok := fresh[id]; ok || !e.putAt.Before(start) {
			fresh[id] = e
		}
	}
	sc.docs, sc.loaded = fresh, start
	return nil
}

// put applies a document this process has just stored. Only a scope that is kept takes it: one
// that is not reads the store when it is first asked for.
func (m *ReadModel[T, K]) put(d T) {
	d = bare(d)
	mt := metaOf(&d)
	m.mu.Lock()
	defer m.mu.Unlock()
	sc, ok := m.byScope.Get(m.scopeOf(&d))
	if !ok {
		return
	}
	if e, ok := sc.docs[mt.ID]; ok && metaOf(&e.doc).Version > mt.Version {
		return
	}
	sc.docs[mt.ID] = modelDoc[T]{doc: d, putAt: m.now()}
}

// bare is d without its outbox, which a read model does not keep.
func bare[T any](d T) T {
	m := metaOf(&d)
	m.Outbox, m.OutboxSince, m.raised = nil, nil, nil
	return d
}
