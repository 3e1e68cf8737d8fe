package mongo

import (
	"context"
	"sync"
	"time"

	"rentalplatform/libs/fifo"
)

// snapshots keeps, per account and mode, the account's endpoints in memory for the delivery
// path: the fan-out of every event asks which endpoints are subscribed and every attempt needs
// its endpoint's URL and secrets. Asking the store each time costs a query per event and a read
// per attempt; on the embedded store the fan-out query is a scan of the whole collection.
//
// A snapshot is read from the store when it is older than ttl, so a change made by another
// process is seen within ttl. A change made through this process's repository is applied to the
// snapshot as it is written, so it is seen at once. Entries carry their document version and
// the newer one always wins, so a load that raced a write cannot bring back the older state; an
// endpoint this process deleted stays as a deleted entry until a load no longer returns it.
type snapshots struct {
	load func(context.Context, scope) ([]document, error)
	ttl  time.Duration
	now  func() time.Time

	mu      sync.Mutex
	byScope *fifo.Map[scope, *snapshot] // the accounts used last, snapshotScopes at most
}

// snapshotScopes bounds the accounts (and modes) whose endpoints a process keeps in memory.
const snapshotScopes = 10_000

type scope struct {
	account  string
	livemode bool
}

type snapshot struct {
	loaded    time.Time              // zero until the first load completes
	loading   chan struct{}          // closed when the load in progress ends; nil if none
	endpoints map[string]cachedEntry // by id
}

type cachedEntry struct {
	doc   document // without its outbox
	putAt time.Time
}

func newSnapshots(load func(context.Context, scope) ([]document, error), ttl time.Duration, now func() time.Time) *snapshots {
	return &snapshots{load: load, ttl: ttl, now: now, byScope: fifo.New[scope, *snapshot](snapshotScopes)}
}

// get returns the scope's endpoints (deleted ones this process wrote included), reading them from the store first if
// the snapshot is missing or older than ttl. Concurrent callers share one load.
func (s *snapshots) get(ctx context.Context, sc scope) ([]document, error) {
	for {
		s.mu.Lock()
		sn, ok := s.byScope.Get(sc)
		if !ok {
			sn = &snapshot{endpoints: map[string]cachedEntry{}}
			s.byScope.Put(sc, sn)
		}
		if !sn.loaded.IsZero() && s.now().Sub(sn.loaded) < s.ttl {
			out := make([]document, 0, len(sn.endpoints))
			for _, e := range sn.endpoints {
				out = append(out, e.doc)
			}
			s.mu.Unlock()
			return out, nil
		}
		if wait := sn.loading; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		sn.loading = done
		s.mu.Unlock()

		start := s.now()
		docs, err := s.load(ctx, sc)

		s.mu.Lock()
		sn.loading = nil
		close(done)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		fresh := make(map[string]cachedEntry, len(docs))
		for _, d := range docs {
			fresh[d.ID] = cachedEntry{doc: d, putAt: start}
		}
		// Writes this process made while the load ran, or that the load could not see yet,
		// win over what was read.
		for id, e := range sn.endpoints {
			if f, ok := fresh[id]; ok && f.doc.Version >= e.doc.Version {
				continue
			}
			if _, ok := fresh[id]; ok || !e.putAt.Before(start) {
				fresh[id] = e
			}
		}
		sn.endpoints, sn.loaded = fresh, start
		s.mu.Unlock()
	}
}

// put applies a document this process has just written. Only a scope that has a snapshot keeps
// it: a scope without one reads the store when it is first asked for.
func (s *snapshots) put(d document) {
	d.Outbox, d.OutboxSince = nil, nil
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.byScope.Get(scope{d.Account, d.Livemode})
	if !ok {
		return
	}
	if e, ok := sn.endpoints[d.ID]; ok && e.doc.Version > d.Version {
		return
	}
	sn.endpoints[d.ID] = cachedEntry{doc: d, putAt: s.now()}
}
