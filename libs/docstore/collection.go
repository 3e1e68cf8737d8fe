package docstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/libs/events"
	"rentalplatform/libs/fifo"
	"rentalplatform/libs/outbox"
)

// Options configure a collection.
type Options struct {
	// NotFound makes the error that Get, Cached and Update return for a document that does not
	// exist or is deleted; nil: ErrNotFound, wrapped.
	NotFound func(id string) error
	// Conflict is what Update returns when its retries run out (another process kept winning
	// the race), domainerr.LockTimeout of the object the documents are; nil: ErrConflict.
	Conflict error
	// Cache, when positive, keeps that many documents as this process last read or wrote them:
	// Cached answers from them, and Update starts from them. On MongoDB every replace names the
	// version it started from, so a stale copy only costs a retry; on the embedded store the
	// process owns the data, so its copy is what is stored. A document leaves the cache
	// cacheAge after it entered it (read or written again, it comes back): the cache serves
	// the work that follows a write within seconds (a fan-out's attempts, a payment's
	// collection, the relay's clear), and a process's memory then settles at what its traffic
	// of the last minutes holds instead of growing until Cache documents are held.
	Cache int
	// Outbox is the relay that publishes the events the documents raise (Meta.Raise); nil for a
	// collection whose documents raise none. The collection adds itself to the relay's sweep.
	Outbox *outbox.Relay
	// Now tells the time of outbox entries; nil: time.Now.
	Now func() time.Time
	// IdempotentCreates marks a collection of aggregates that callers create: a document
	// inserted for a request that carries an Idempotency-Key stores it (Meta.IdempotencyKey),
	// and EnsureIndexes adds the owner's unique index on it, so a retried create stores
	// nothing (Aggregates.InsertOnce). Its documents store their owner as "account" and
	// "livemode".
	IdempotentCreates bool
	// Indexes are the indexes the collection's queries rely on, which EnsureIndexes creates
	// (with any it is given). Declared here, they also tell the embedded store's in-memory
	// index which fields to hold (queryindex.go) from the start, whether or not EnsureIndexes
	// runs (tests of an adapter may not).
	Indexes []mongo.IndexModel
}

// cacheAge is how long a document stays in a collection's cache (Options.Cache).
const cacheAge = 2 * time.Minute

// Collection stores documents of type T, a struct that embeds Meta inline.
type Collection[T any] struct {
	coll     *mongo.Collection
	strategy strategy
	w        writer
	opts     Options
	cache    *fifo.Map[string, bson.Raw] // nil without Options.Cache
	relay    *outbox.Relay

	mu     sync.Mutex
	queues map[string]*queue[T] // writers waiting, by document

	// pending: the documents whose outbox holds events, where the strategy keeps them in
	// memory (pending.go); nil otherwise.
	pending *pendingIndex
	// index: the fields queries use, of every document, where the strategy keeps them in
	// memory (queryindex.go); nil otherwise.
	index *queryIndex
	// watchers are told of every document this collection stores (read models), registered
	// before the collection is used.
	watchers []func(T)
}

// watch has fn told of every document the collection stores, as stored (a deleted one too).
func (c *Collection[T]) watch(fn func(T)) { c.watchers = append(c.watchers, fn) }

// stored tells the watchers of a document stored as raw, each given a copy of its own.
func (c *Collection[T]) stored(raw bson.Raw) {
	for _, fn := range c.watchers {
		if doc, err := c.decode(raw); err == nil { // it was just encoded from a T
			fn(doc)
		}
	}
}

// NewCollection returns the collection name of db. It panics if T does not embed Meta inline:
// that is a programming error, met when the service starts.
func NewCollection[T any](db *DB, name string, opts Options) *Collection[T] {
	var zero T
	if _, ok := any(&zero).(document); !ok {
		panic(fmt.Sprintf("docstore: %T does not embed docstore.Meta", zero))
	}
	if raw, err := bson.Marshal(&zero); err != nil || bson.Raw(raw).Lookup("version").Type == 0 {
		panic(fmt.Sprintf("docstore: %T must embed docstore.Meta with `bson:\",inline\"` (%v)", zero, err))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	coll := db.Collection(name)
	c := &Collection[T]{
		coll: coll, strategy: db.strategy, w: db.strategy.writer(coll), opts: opts,
		relay: opts.Outbox, queues: map[string]*queue[T]{},
	}
	if opts.Cache > 0 {
		c.cache = fifo.NewAged[string, bson.Raw](opts.Cache, cacheAge, opts.Now)
	}
	if db.strategy.holdsQueries() {
		c.index = newQueryIndex()
		for _, m := range c.declaredIndexes() {
			c.index.declare(indexKeys(m)...)
		}
		db.indexes.add(name, c.index)
	}
	if c.relay != nil {
		if db.strategy.tracksPending() {
			c.pending = newPendingIndex(db.Collection(markCollection), name, opts.Now)
		}
		c.relay.Add(c) // the relay may sweep the collection at once: it is complete by now
	}
	return c
}

// Name is the collection's name.
func (c *Collection[T]) Name() string { return c.coll.Name() }

func metaOf[T any](d *T) *Meta { return any(d).(document).meta() }

func (c *Collection[T]) notFound(id string) error {
	if c.opts.NotFound != nil {
		return c.opts.NotFound(id)
	}
	return fmt.Errorf("%w: %s %s", ErrNotFound, c.coll.Name(), id)
}

func (c *Collection[T]) conflict() error {
	if c.opts.Conflict != nil {
		return c.opts.Conflict
	}
	return ErrConflict
}

func (c *Collection[T]) decode(raw bson.Raw) (T, error) {
	var d T
	if err := bson.Unmarshal(raw, &d); err != nil {
		return d, fmt.Errorf("decode %s %s: %w", c.coll.Name(), raw.Lookup("_id"), err)
	}
	return d, nil
}

// read returns the stored document, from the cache unless fresh; found is false when there is
// none.
func (c *Collection[T]) read(ctx context.Context, id string, fresh bool) (raw bson.Raw, found bool, err error) {
	if c.cache != nil && !fresh {
		if raw, ok := c.cache.Get(id); ok {
			return raw, true, nil
		}
	}
	raw, err = c.coll.FindOne(ctx, byID(id)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		c.forget(id)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("find %s %s: %w", c.coll.Name(), id, err)
	}
	raw = slices.Clone(raw)
	c.rememberRead(id, raw)
	return raw, true, nil
}

// rememberRead caches a document just read from the store, unless the cache holds a newer
// version of it: a write of this process may have landed while the read was in flight, and
// the copy it cached must not be replaced by the older one the read returned.
func (c *Collection[T]) rememberRead(id string, raw bson.Raw) {
	if c.cache == nil {
		return
	}
	if cached, ok := c.cache.Get(id); ok && versionOf(cached) > versionOf(raw) {
		return
	}
	c.cache.Put(id, raw)
}

func versionOf(raw bson.Raw) int64 {
	v, _ := raw.Lookup("version").AsInt64OK()
	return v
}

func (c *Collection[T]) remember(id string, raw bson.Raw) {
	if c.cache != nil {
		c.cache.Put(id, raw)
	}
}

func (c *Collection[T]) forget(id string) {
	if c.cache != nil {
		c.cache.Delete(id)
	}
}

// Get reads the document from the store.
func (c *Collection[T]) Get(ctx context.Context, id string) (T, error) {
	return c.get(ctx, id, true)
}

// Cached is Get answered from the cache when it has the document (see Options.Cache): the
// document as this process last read or wrote it, which another process may have changed
// since.
func (c *Collection[T]) Cached(ctx context.Context, id string) (T, error) {
	return c.get(ctx, id, false)
}

// Current is the document as stored: Get, answered from the cache (Options.Cache) where this
// process is the only one writing the store — the embedded store, whose cached copies are
// what is stored — so a hot read costs no round trip there. On MongoDB, where other processes
// write, it always reads the store.
func (c *Collection[T]) Current(ctx context.Context, id string) (T, error) {
	return c.get(ctx, id, c.strategy.multiProcess())
}

func (c *Collection[T]) get(ctx context.Context, id string, fresh bool) (T, error) {
	var zero T
	raw, found, err := c.read(ctx, id, fresh)
	if err != nil {
		return zero, err
	}
	if !found {
		return zero, c.notFound(id)
	}
	d, err := c.decode(raw)
	if err != nil {
		return zero, err
	}
	if metaOf(&d).Deleted {
		return zero, c.notFound(id)
	}
	return d, nil
}

// Insert stores a new document at version 1, with the events it raised in its outbox, and
// hands them to the relay. It reports false, changing nothing, when a document with its _id,
// or with the same value of a unique index, is stored already.
func (c *Collection[T]) Insert(ctx context.Context, doc T) (bool, error) {
	created, err := c.InsertAll(ctx, []T{doc})
	if err != nil {
		return false, err
	}
	return created[0], nil
}

// InsertAll is Insert for several documents, in one command (on the embedded store, shared
// with concurrent inserts); it reports for each whether it was new.
func (c *Collection[T]) InsertAll(ctx context.Context, docs []T) ([]bool, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	raws := make([]bson.Raw, len(docs))
	boxes := make([][]outbox.Doc, len(docs))
	var stamp int64 // one for the whole insert: its documents are stored together
	key := c.idempotencyKey(ctx)
	for i := range docs {
		m := metaOf(&docs[i])
		m.IdempotencyKey = keyOf(key, i, len(docs))
		box, err := c.entries(ctx, m.raised)
		if err != nil {
			return nil, err
		}
		m.raised, m.Version, m.Outbox, m.OutboxSince, m.OutboxStamp = nil, 1, box, nil, 0
		if len(box) > 0 {
			if stamp == 0 {
				if stamp, err = c.pending.stamp(ctx); err != nil {
					return nil, err
				}
				defer c.pending.done(stamp)
			}
			m.OutboxSince, m.OutboxStamp = TimePtr(c.opts.Now()), stamp
		}
		if raws[i], err = bson.Marshal(&docs[i]); err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", c.coll.Name(), m.ID, err)
		}
		boxes[i] = box
	}
	created := make([]bool, len(docs))
	// The events of every document inserted go to the fast path together: one publish (one
	// task per eventtask.MaxBatch) for a bulk insert rather than one per document.
	var fresh []int
	for i, err := range c.w.insert(ctx, raws) {
		m := metaOf(&docs[i])
		switch {
		case err == nil:
			created[i] = true
			c.remember(m.ID, raws[i])
			c.index.put(raws[i])
			c.stored(raws[i])
			c.pending.note(m.ID, m.OutboxSince, m.OutboxStamp)
			if len(boxes[i]) > 0 {
				fresh = append(fresh, i)
			}
		case mongo.IsDuplicateKeyError(err):
		default:
			// This document, and those after it, may have been stored without an answer.
			for j := i; j < len(docs); j++ {
				c.unknownOutcome(metaOf(&docs[j]).ID, metaOf(&docs[j]))
			}
			return nil, fmt.Errorf("insert into %s: %w", c.coll.Name(), err)
		}
	}
	c.dispatchInserted(ctx, docs, boxes, fresh)
	return created, nil
}

// dispatchInserted hands the events of the documents an insert stored (fresh, by index) to the
// relay's fast path in one publish, each document's entries cleared once published.
func (c *Collection[T]) dispatchInserted(ctx context.Context, docs []T, boxes [][]outbox.Doc, fresh []int) {
	if len(fresh) == 0 || c.relay == nil {
		return
	}
	var all []outbox.Doc
	for _, i := range fresh {
		all = append(all, boxes[i]...)
	}
	c.relay.Dispatch(ctx, all, func(ctx context.Context) error {
		for _, i := range fresh {
			if err := c.Clear(ctx, metaOf(&docs[i]).ID, boxes[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// entries returns the outbox entries of events raised under ctx.
func (c *Collection[T]) entries(ctx context.Context, raised []events.Event) ([]outbox.Doc, error) {
	if len(raised) == 0 {
		return nil, nil
	}
	if c.relay == nil {
		return nil, fmt.Errorf("docstore: %s has no outbox for the events its documents raise", c.coll.Name())
	}
	out := make([]outbox.Doc, len(raised))
	for i, e := range raised {
		out[i] = c.relay.Entry(ctx, e)
	}
	return out, nil
}

// dispatch hands the events a write just stored to the relay's fast path, which clears them
// once published (Clear: on MongoDB a write, on the embedded store only in memory).
func (c *Collection[T]) dispatch(ctx context.Context, id string, box []outbox.Doc) {
	if len(box) == 0 || c.relay == nil {
		return
	}
	c.relay.Dispatch(ctx, box, func(ctx context.Context) error { return c.Clear(ctx, id, box) })
}

// Delete removes the document at once, whatever its outbox holds. It is for undoing an Insert
// whose document raised nothing; an aggregate that is deleted as a change of its own sets
// Meta.Deleted in Update.
func (c *Collection[T]) Delete(ctx context.Context, id string) error {
	_, err := c.coll.DeleteOne(ctx, byID(id))
	c.forget(id)
	c.pending.note(id, nil, 0)
	if err != nil {
		c.index.unknown(id)
		return fmt.Errorf("delete %s %s: %w", c.coll.Name(), id, err)
	}
	c.index.remove(id)
	return nil
}

// DeleteMany removes the documents filter matches (retention purges) and returns how many.
func (c *Collection[T]) DeleteMany(ctx context.Context, filter bson.D) (int64, error) {
	res, err := c.coll.DeleteMany(ctx, filter)
	if c.cache != nil {
		c.cache.Clear()
	}
	if err != nil {
		c.index.invalidate() // some may be gone
		return 0, fmt.Errorf("delete from %s: %w", c.coll.Name(), err)
	}
	c.index.removeMatching(filter)
	return res.DeletedCount, nil
}
