package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/libs/fifo"
	"rentalplatform/libs/mongox"
)

// docCacheSize bounds the documents a docStore keeps in memory: the deliveries (or events) of
// the last few thousand fan-outs, which is what the delivery path reads and writes.
const docCacheSize = 8192

// docStore is what the event and delivery stores share on the delivery path, where every
// attempt reads and rewrites a delivery and its event: a cache of the documents this process
// read or wrote most recently, so a read-modify-write starts from memory, and, on a store
// without atomic conditional writes (the embedded one), group commit of the rewrites (see
// mongox.Batcher), which there cost about a third as much in a batch.
//
// The cache is only a starting point. On MongoDB every rewrite names the version it read and a
// stale cached copy loses that race and is read again. On the embedded store, writes are
// serialised in-process (stripes) and one process owns the data, so what this process wrote
// last is what is stored.
type docStore[T any] struct {
	coll     *mongo.Collection
	srv      *mongox.Server
	locks    *stripes
	batch    *mongox.Batcher
	cache    *fifo.Map[string, T]
	notFound error
	version  func(T) int64
}

func newDocStore[T any](coll *mongo.Collection, notFound error, version func(T) int64) *docStore[T] {
	return &docStore[T]{
		coll: coll, srv: mongox.NewServer(coll.Database()), locks: newStripes(),
		batch: mongox.NewBatcher(coll), cache: fifo.New[string, T](docCacheSize),
		notFound: notFound, version: version,
	}
}

// find reads the document from the store, and remembers it.
func (s *docStore[T]) find(ctx context.Context, id string) (T, error) {
	d, err := findByID[T](ctx, s.coll, id, s.notFound)
	if err == nil {
		s.cache.Put(id, d)
	}
	return d, err
}

// cached returns the document as this process last saw it, or reads it.
func (s *docStore[T]) cached(ctx context.Context, id string) (T, error) {
	if d, ok := s.cache.Get(id); ok {
		return d, nil
	}
	return s.find(ctx, id)
}

// insertAll inserts docs (keyed by ids) with group commit, remembers the new ones, and
// reports for each whether it was new: a document whose _id or unique key is stored already
// is not, which idempotent writers treat as done. Concurrent fan-outs share one command: an
// insert alone costs the embedded store about three times its share of a batch.
func (s *docStore[T]) insertAll(ctx context.Context, ids []string, docs []T) ([]bool, error) {
	models := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		models[i] = mongo.NewInsertOneModel().SetDocument(d)
	}
	created := make([]bool, len(docs))
	for i, err := range s.batch.WriteAll(ctx, models) {
		switch {
		case err == nil:
			created[i] = true
			s.cache.Put(ids[i], docs[i])
		case mongox.IsDuplicateKey(err):
		default:
			return nil, fmt.Errorf("insert into %s: %w", s.coll.Name(), err)
		}
	}
	return created, nil
}

// update runs read → change → conditional replace until the replace lands, starting from the
// cached document. change returns the document to store, or false when there is nothing to
// write. It returns the document as stored (or as read, when nothing was written), change's
// error, or conflict when retries run out.
func (s *docStore[T]) update(ctx context.Context, id string, conflict error, change func(T) (T, bool, error)) (T, error) {
	defer s.locks.lock(id)()
	var zero T
	d, readErr := s.cached(ctx, id)
	for attempt := range maxUpdateAttempts {
		if readErr != nil {
			return zero, readErr
		}
		next, write, err := change(d)
		if err != nil || !write {
			return d, err
		}
		landed, err := s.replace(ctx, id, s.version(d), next)
		if err != nil {
			return zero, err
		}
		if landed {
			s.cache.Put(id, next)
			return next, nil
		}
		// Another process wrote first (or the cached copy was stale): read it and try again.
		if err := pauseAfterConflict(ctx, attempt); err != nil {
			return zero, err
		}
		d, readErr = s.find(ctx, id)
	}
	return zero, conflict
}

// replace stores next over the document read at version and reports whether it landed.
func (s *docStore[T]) replace(ctx context.Context, id string, version int64, next T) (bool, error) {
	if s.srv.Capabilities(ctx).AtomicConditionalWrites {
		res, err := s.coll.ReplaceOne(ctx, s.srv.VersionFilter(ctx, id, "version", version), next)
		if err != nil {
			return false, fmt.Errorf("replace %s %s: %w", s.coll.Name(), id, err)
		}
		return res.MatchedCount == 1, nil
	}
	// By _id alone (see mongox.Server.VersionFilter), which also makes the write safe to repeat,
	// as the batcher may.
	err := s.batch.Write(ctx, mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: id}}).SetReplacement(next))
	if errors.Is(err, mongox.ErrNoMatch) {
		s.cache.Delete(id)
		return false, s.notFound
	}
	if err != nil {
		return false, fmt.Errorf("replace %s %s: %w", s.coll.Name(), id, err)
	}
	return true, nil
}
