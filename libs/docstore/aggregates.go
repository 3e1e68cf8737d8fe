package docstore

import (
	"context"
	"fmt"

	"rentalplatform/libs/events"
)

// Aggregates keeps a service's aggregates A in the documents D of a collection. The adapter
// gives the mapping (Of, Set) and its queries; Aggregates gives every read and write by id —
// owner-checked for a caller's request, unchecked for the service's own background work —
// and stores each change with the events the aggregate raised, rendered by Events, in the
// same write.
type Aggregates[D Owned, A any] struct {
	Docs *Collection[D]
	// NotFound is the error for an id that names no document of the caller's.
	NotFound func(id string) error
	// Of returns the aggregate a document holds. It must share no mutable memory with the
	// document: the document as loaded renders the previous attributes of an update.
	Of func(D) A
	// Set stores the aggregate in the document (its Meta is the store's).
	Set func(*D, A)
	// Events renders the events an aggregate raised; nil for aggregates that raise none.
	Events events.Renderer[A]
	// Cached answers owner-checked reads by Current: from the cache where this process is the
	// store's only writer.
	Cached bool
}

// Put stores a in d with the events it raised, for a write of the caller's making (the steps
// of a Bracket). d is the document a was loaded from, not yet changed (its zero value for a
// new aggregate): it gives the previous attributes of an update.
func (m *Aggregates[D, A]) Put(ctx context.Context, d *D, a A) error {
	var evs []events.Event
	if m.Events != nil {
		// Events calls before, if at all, before it returns: d is not yet changed then.
		var err error
		if evs, err = m.Events.Events(ctx, a, func() A { return m.Of(*d) }); err != nil {
			return err
		}
	}
	m.Set(d, a)
	metaOf(d).Raise(evs...)
	return nil
}

// Insert stores a new aggregate with its events. It reports false, storing nothing, when its
// id or a unique index's value is taken.
func (m *Aggregates[D, A]) Insert(ctx context.Context, a A) (bool, error) {
	created, err := m.InsertAll(ctx, []A{a})
	if err != nil {
		return false, err
	}
	return created[0], nil
}

// InsertAll is Insert of several aggregates in one command; it reports for each whether it was
// new.
func (m *Aggregates[D, A]) InsertAll(ctx context.Context, as []A) ([]bool, error) {
	_, created, err := m.insert(ctx, as)
	return created, err
}

// insert stores the aggregates with their events in one command and returns their documents
// and whether each was new.
func (m *Aggregates[D, A]) insert(ctx context.Context, as []A) ([]D, []bool, error) {
	docs := make([]D, len(as))
	for i, a := range as {
		if err := m.Put(ctx, &docs[i], a); err != nil {
			return nil, nil, err
		}
	}
	created, err := m.Docs.InsertAll(ctx, docs)
	if err != nil {
		return nil, nil, fmt.Errorf("insert into %s: %w", m.Docs.Name(), err)
	}
	return docs, created, nil
}

// Get reads the aggregate id of the caller's (account, mode), or NotFound(id) for one that does
// not exist and one of another owner alike.
func (m *Aggregates[D, A]) Get(ctx context.Context, id, account string, livemode bool) (A, error) {
	get := m.Docs.Get
	if m.Cached {
		get = m.Docs.Current
	}
	d, err := get(ctx, id)
	d, err = ownedOnly(d, err, id, account, livemode, m.NotFound)
	if err != nil {
		var zero A
		return zero, err
	}
	return m.Of(d), nil
}

// Load reads the aggregate id whatever its owner: the service's own work on an aggregate it
// found by id, never a caller's request. Like Get, it is answered from the cache when Cached.
func (m *Aggregates[D, A]) Load(ctx context.Context, id string) (A, error) {
	get := m.Docs.Get
	if m.Cached {
		get = m.Docs.Current
	}
	d, err := get(ctx, id)
	if err != nil {
		var zero A
		return zero, err
	}
	return m.Of(d), nil
}

// Update applies fn to the caller's aggregate id and stores it with the events it raised; an
// aggregate of another owner is NotFound(id) and is not written, and so is every aggregate
// for a caller that names no account. fn may run more than once (the store retries on a
// conflict), so it only changes the aggregate it is given.
func (m *Aggregates[D, A]) Update(ctx context.Context, id, account string, livemode bool, fn func(A) error) (A, error) {
	return m.update(ctx, id, func(d D) bool { return account != "" && d.OwnedBy(account, livemode) }, fn)
}

// UpdateAny is Update without the owner check: the service's own work (an expiry, a retry,
// the engine), never a caller's request.
func (m *Aggregates[D, A]) UpdateAny(ctx context.Context, id string, fn func(A) error) (A, error) {
	return m.update(ctx, id, func(D) bool { return true }, fn)
}

func (m *Aggregates[D, A]) update(ctx context.Context, id string, mine func(D) bool, fn func(A) error) (A, error) {
	var out A
	_, err := m.Docs.Update(ctx, id, func(d *D) error {
		if !mine(*d) {
			return m.NotFound(id)
		}
		a := m.Of(*d)
		if err := fn(a); err != nil {
			return err
		}
		out = a
		return m.Put(ctx, d, a)
	})
	if err != nil {
		var zero A
		return zero, err
	}
	return out, nil
}
