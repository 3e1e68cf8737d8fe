package docstore

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// heldQuery is a query as the collection's queryIndex may serve it: the order, the limit, and
// whether only _ids are asked for.
type heldQuery struct {
	key     string // sorted by
	dir     int    // 1 ascending, -1 descending
	limit   int    // 0: all
	after   string // for a query ordered by _id: start past this one (a page's cursor)
	idsOnly bool
}

// heldOptions reads the options of a Find into a heldQuery; ok is false for an option the
// index does not serve (a skip, a hint, a projection of fields, a sort on several keys …).
func heldOptions(opts []options.Lister[options.FindOptions]) (q heldQuery, ok bool) {
	q = heldQuery{key: "_id", dir: 1}
	var o options.FindOptions
	for _, l := range opts {
		for _, set := range l.List() {
			if err := set(&o); err != nil {
				return q, false
			}
		}
	}
	if o.Limit != nil {
		q.limit = int(max(*o.Limit, -*o.Limit))
	}
	if o.Sort != nil {
		sort, ok := o.Sort.(bson.D)
		if !ok || len(sort) != 1 {
			return q, false
		}
		v, err := marshalValue(sort[0].Value)
		n, isNum := number(v)
		if err != nil || !isNum || !n.isInt || (n.i != 1 && n.i != -1) {
			return q, false
		}
		q.key, q.dir = sort[0].Key, int(n.i)
	}
	if o.Projection != nil {
		p, ok := o.Projection.(bson.D)
		if !ok || len(p) != 1 || p[0].Key != "_id" {
			return q, false
		}
		q.idsOnly = true
	}
	o.Limit, o.Sort, o.Projection, o.BatchSize = nil, nil, nil, nil
	return q, reflect.ValueOf(o).IsZero()
}

// heldAttempts bounds how often a query is answered again when a document it found no longer
// matches once read (the index held an older state of it); the store answers after that.
const heldAttempts = 3

// fetchConcurrency is how many documents a query reads by _id at once.
const fetchConcurrency = 8

// findHeld answers a query (filter already live) from the collection's queryIndex, where the
// strategy keeps one. served is false when there is none or the query is not one it serves
// (the reason is counted, Unserved); the caller then asks the store.
func (c *Collection[T]) findHeld(ctx context.Context, filter bson.D, q heldQuery) (docs []T, served bool, err error) {
	if c.index == nil {
		return nil, false, nil
	}
	if !c.index.holds(q.key) {
		c.index.missedQuery("sort on " + q.key)
		return nil, false, nil
	}
	m, err := compileFilter(filter, c.index.holds)
	if err != nil {
		c.index.missedQuery(err.Error())
		return nil, false, nil
	}
	whole, err := compileFilter(filter, nil)
	if err != nil {
		return nil, false, nil
	}
	read := func(ctx context.Context, id string) (bson.Raw, bool, error) { return c.read(ctx, id, true) }
	if err := c.index.ready(ctx, c.coll, read); err != nil {
		return nil, true, err
	}
	for range heldAttempts {
		found := c.index.find(m, q.key, q.dir, q.limit, q.after)
		if q.idsOnly {
			return c.idsOf(found)
		}
		docs, agreed, err := c.fetch(ctx, found, whole)
		if err != nil || agreed {
			return docs, true, err
		}
	}
	c.index.missedQuery("the index disagreed with the store")
	return nil, false, nil
}

// idsOf returns documents holding only their _id.
func (c *Collection[T]) idsOf(found []*heldDoc) ([]T, bool, error) {
	out := make([]T, len(found))
	for i, d := range found {
		raw, err := bson.Marshal(bson.D{{Key: "_id", Value: d.id}})
		if err != nil {
			return nil, true, err
		}
		if out[i], err = c.decode(raw); err != nil {
			return nil, true, err
		}
	}
	return out, true, nil
}

// fetch reads the documents found by _id (from the cache where it has them: on this strategy
// the cached copy is what is stored), in their order. agreed is false when one of them is gone
// or no longer matches the filter: the index is corrected, and the query must run again.
func (c *Collection[T]) fetch(ctx context.Context, found []*heldDoc, whole matcher) (docs []T, agreed bool, err error) {
	raws := make([]bson.Raw, len(found))
	errs := make([]error, len(found))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(fetchConcurrency, len(found)) {
		wg.Go(func() {
			for i := range next {
				raw, ok, err := c.read(ctx, found[i].id, false)
				if err == nil && !ok {
					raw = nil
				}
				raws[i], errs[i] = raw, err
				if err != nil {
					cancel()
				}
			}
		})
	}
	for i := range found {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	agreed = true
	docs = make([]T, 0, len(found))
	for i, raw := range raws {
		if raw == nil {
			c.index.remove(found[i].id)
			agreed = false
			continue
		}
		if !whole(rawDoc(raw)) {
			c.index.put(raw)
			agreed = false
			continue
		}
		d, err := c.decode(raw)
		if err != nil {
			return nil, false, err
		}
		docs = append(docs, d)
	}
	return docs, agreed, nil
}

// Unserved counts the queries of this collection that its in-memory index (embedded store)
// could not serve, by reason; the store evaluated them over the whole collection. Empty where
// the strategy keeps no index.
func (c *Collection[T]) Unserved() map[string]int {
	if c.index == nil {
		return nil
	}
	return c.index.unserved()
}

func (x *queryIndex) unserved() map[string]int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return maps.Clone(x.missed)
}

// indexRegistry is the query indexes of a database's collections.
type indexRegistry struct {
	mu     sync.Mutex
	byName map[string][]*queryIndex
}

func (r *indexRegistry) add(name string, x *queryIndex) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = map[string][]*queryIndex{}
	}
	r.byName[name] = append(r.byName[name], x)
}

// Unserved counts, by "collection: reason", the queries of the database's collections that
// their in-memory indexes (embedded store) could not serve, which the store then evaluated
// over the whole collection: a query on a field in none of the collection's declared indexes,
// or an operator the index does not evaluate. Adapter tests check it is empty
// (servicetest.Store), so every query a service makes is one the index serves. Empty on
// MongoDB, whose indexes serve queries themselves.
func (d *DB) Unserved() map[string]int {
	out := map[string]int{}
	if d.indexes == nil {
		return out
	}
	d.indexes.mu.Lock()
	defer d.indexes.mu.Unlock()
	for name, xs := range d.indexes.byName {
		for _, x := range xs {
			for reason, n := range x.unserved() {
				out[name+": "+reason] += n
			}
		}
	}
	return out
}
