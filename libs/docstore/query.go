package docstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox"
)

// live adds, for a collection whose aggregates may wait as deleted until their last event is
// published, the condition that hides them. Other collections never keep a deleted document.
func (c *Collection[T]) live(filter bson.D) bson.D {
	f := append(bson.D{}, filter...)
	if c.relay != nil {
		f = append(f, bson.E{Key: "deleted", Value: bson.D{{Key: "$ne", Value: true}}})
	}
	return f
}

// Find returns the documents filter matches (deleted aggregates never), as opts say.
func (c *Collection[T]) Find(ctx context.Context, filter bson.D, opts ...options.Lister[options.FindOptions]) ([]T, error) {
	if q, ok := heldOptions(opts); ok {
		docs, served, err := c.findHeld(ctx, c.live(filter), q)
		if err != nil {
			return nil, fmt.Errorf("find in %s: %w", c.coll.Name(), err)
		}
		if served {
			return docs, nil
		}
	}
	var out []T
	if err := c.findAll(ctx, c.live(filter), &out, opts...); err != nil {
		return nil, fmt.Errorf("find in %s: %w", c.coll.Name(), err)
	}
	return out, nil
}

// cursorCloseTimeout bounds closing a cursor after its caller's context has ended.
const cursorCloseTimeout = 5 * time.Second

// findAll runs a query and decodes every document it returns into out (a pointer to a slice).
// Every query of the package goes through it, and closes its cursor with a context of its own,
// not the caller's, which may be what just ended: a cursor left open holds resources on the
// server (on the embedded store, a SQLite connection, with no cursor timeout).
func (c *Collection[T]) findAll(ctx context.Context, filter bson.D, out any, opts ...options.Lister[options.FindOptions]) error {
	cur, err := c.coll.Find(ctx, filter, opts...)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cursorCloseTimeout)
		defer cancel()
		_ = cur.Close(closeCtx) // a cursor the server still holds times out there
	}()
	if err := cur.All(ctx, out); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

// FindOne returns the first document filter matches; found is false when there is none.
func (c *Collection[T]) FindOne(ctx context.Context, filter bson.D) (doc T, found bool, err error) {
	docs, served, err := c.findHeld(ctx, c.live(filter), heldQuery{key: "_id", dir: 1, limit: 1})
	if err != nil {
		return doc, false, fmt.Errorf("find in %s: %w", c.coll.Name(), err)
	}
	if served {
		if len(docs) == 0 {
			return doc, false, nil
		}
		return docs[0], true, nil
	}
	err = c.coll.FindOne(ctx, c.live(filter)).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return doc, false, nil
	}
	if err != nil {
		return doc, false, fmt.Errorf("find in %s: %w", c.coll.Name(), err)
	}
	return doc, true, nil
}

// Page reads one page of a list, newest first by _id. filter scopes the query to the account
// and mode (and any list filters); the cursor and created bounds are added here. It reads one
// document more than the page to learn has_more, which is about the direction read: older
// objects for a forward page, newer ones for an ending_before page.
func (c *Collection[T]) Page(ctx context.Context, filter bson.D, p listing.Params) ([]T, bool, error) {
	return c.PageOn(ctx, "_id", filter, p)
}

// PageOn is Page keyed on another field holding the public, time-ordered id (for documents
// whose _id is something else, such as a hash). created bounds are compared as Unix seconds;
// a collection that stores created otherwise puts its own bounds in filter and passes p
// without them.
func (c *Collection[T]) PageOn(ctx context.Context, key string, filter bson.D, p listing.Params) ([]T, bool, error) {
	f := c.live(filter)
	dir := -1
	switch {
	case p.EndingBefore != "":
		f = append(f, bson.E{Key: key, Value: bson.D{{Key: "$gt", Value: p.EndingBefore}}})
		dir = 1
	case p.StartingAfter != "":
		f = append(f, bson.E{Key: key, Value: bson.D{{Key: "$lt", Value: p.StartingAfter}}})
	}
	if p.CreatedGTE != nil || p.CreatedLTE != nil {
		var created bson.D
		if p.CreatedGTE != nil {
			created = append(created, bson.E{Key: "$gte", Value: *p.CreatedGTE})
		}
		if p.CreatedLTE != nil {
			created = append(created, bson.E{Key: "$lte", Value: *p.CreatedLTE})
		}
		f = append(f, bson.E{Key: "created", Value: created})
	}
	q := heldQuery{key: key, dir: dir, limit: p.Limit + 1}
	if key == "_id" {
		q.after = cmp.Or(p.EndingBefore, p.StartingAfter)
	}
	items, served, err := c.findHeld(ctx, f, q)
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", c.coll.Name(), err)
	}
	if !served {
		if err := c.findAll(ctx, f, &items, options.Find().SetSort(bson.D{{Key: key, Value: dir}}).SetLimit(int64(p.Limit+1))); err != nil {
			return nil, false, fmt.Errorf("list %s: %w", c.coll.Name(), err)
		}
	}
	hasMore := len(items) > p.Limit
	if hasMore {
		items = items[:p.Limit]
	}
	if dir == 1 {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	return items, hasMore, nil
}

// Pending implements outbox.Store: the aggregates whose outbox has held events since before
// the cutoff, deleted ones included.
func (c *Collection[T]) Pending(ctx context.Context, before time.Time, limit int) ([]outbox.Batch, error) {
	if c.pending != nil {
		return c.pendingFromIndex(ctx, before, limit)
	}
	var docs []struct {
		ID     string  `bson:"_id"`
		Outbox Entries `bson:"outbox"`
	}
	if err := c.findAll(ctx, bson.D{{Key: "outbox_since", Value: bson.D{{Key: "$lte", Value: before}}}}, &docs,
		options.Find().SetProjection(bson.D{{Key: "outbox", Value: 1}}).SetLimit(int64(limit))); err != nil {
		return nil, fmt.Errorf("outbox pending in %s: %w", c.coll.Name(), err)
	}
	out := make([]outbox.Batch, 0, len(docs))
	for _, d := range docs {
		out = append(out, outbox.Batch{AggregateID: d.ID, Docs: d.Outbox})
	}
	return out, nil
}

// EnsureIndexes declares the indexes the collection's queries rely on (and, for a collection
// with an outbox, the relay's index on outbox_since). Creating an index that exists with the
// same definition is a no-op. They are created one per command: the embedded store fails a
// createIndexes naming several indexes that all exist, which is every start after the first.
// Where the server cannot use secondary indexes for queries (the embedded store), only the
// unique ones are created: the others would slow every write and speed up nothing.
func (c *Collection[T]) EnsureIndexes(ctx context.Context, models ...mongo.IndexModel) error {
	for _, m := range append(c.declaredIndexes(), models...) {
		c.index.declare(indexKeys(m)...)
		if !c.strategy.createsIndex(isUnique(m)) {
			continue
		}
		if _, err := c.coll.Indexes().CreateOne(ctx, m); err != nil {
			return fmt.Errorf("indexes on %s: %w", c.coll.Name(), err)
		}
	}
	return nil
}

// declaredIndexes are the collection's own indexes (Options.Indexes), its relay's and its
// idempotency key's.
func (c *Collection[T]) declaredIndexes() []mongo.IndexModel {
	models := slices.Clone(c.opts.Indexes)
	if c.relay != nil {
		models = append(models, mongo.IndexModel{
			Keys:    bson.D{{Key: "outbox_since", Value: 1}},
			Options: options.Index().SetName("outbox_since").SetSparse(true),
		})
	}
	if c.opts.IdempotentCreates {
		models = append(models, c.strategy.idempotencyIndex())
	}
	return models
}

// indexKeys returns the fields of an index.
func indexKeys(m mongo.IndexModel) []string {
	var keys []string
	if d, ok := m.Keys.(bson.D); ok {
		for _, e := range d {
			keys = append(keys, e.Key)
		}
	}
	return keys
}

func isUnique(m mongo.IndexModel) bool {
	if m.Options == nil {
		return false
	}
	var o options.IndexOptions
	for _, set := range m.Options.List() {
		if err := set(&o); err != nil {
			return false
		}
	}
	return o.Unique != nil && *o.Unique
}

// codeIndexOptionsConflict: an index of that name exists with other options.
const codeIndexOptionsConflict = 85

// EnsureTTL declares a TTL index on field, so the server removes a document ttl after the date
// it holds, and reports whether the server has TTL indexes (the embedded store has not: the
// caller's periodic purge is then all there is). When the index exists with another period
// (the retention was reconfigured), the period is changed in place.
func (c *Collection[T]) EnsureTTL(ctx context.Context, name, field string, ttl time.Duration) (bool, error) {
	if !c.strategy.ttlIndexes() {
		return false, nil
	}
	secs := int32(min(ttl/time.Second, 1<<31-1))
	_, err := c.coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: field, Value: 1}},
		Options: options.Index().SetName(name).SetExpireAfterSeconds(secs),
	})
	var se mongo.ServerError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &se) && se.HasErrorCode(codeIndexOptionsConflict):
		err = c.coll.Database().RunCommand(ctx, bson.D{
			{Key: "collMod", Value: c.coll.Name()},
			{Key: "index", Value: bson.D{{Key: "name", Value: name}, {Key: "expireAfterSeconds", Value: secs}}},
		}).Err()
		if err != nil {
			return true, fmt.Errorf("change TTL of %s.%s: %w", c.coll.Name(), name, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("TTL index on %s.%s: %w", c.coll.Name(), field, err)
}
