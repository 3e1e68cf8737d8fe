package mongo

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/libs/mongox"
)

// maxUpdateAttempts bounds the optimistic-concurrency retries of one update. Every lost race
// means another writer won, so this only runs out under heavy contention on one document.
const maxUpdateAttempts = 20

// lockStripes is the number of in-process locks writes of one collection are spread over.
const lockStripes = 64

// stripes serialises writes to one document within the process.
//
// Writes to one document are made safe two ways. Across processes, a replace names the version
// it read and is retried when another write got in first (optimistic concurrency; atomic on
// MongoDB). Within this process, writes to one document also take a striped lock, because the
// embedded store (FerretDB v1) evaluates a replace's filter between its read and its write, so
// two concurrent conditional replaces there can both succeed and one update be lost, and it
// loses concurrent $sets of one document too. The lock makes one process correct on every
// store and spares same-process writers futile retries; the version check keeps several
// processes correct on MongoDB.
type stripes struct {
	seed  maphash.Seed
	locks [lockStripes]sync.Mutex
}

func newStripes() *stripes { return &stripes{seed: maphash.MakeSeed()} }

// tryLock takes the lock of id's stripe if it is free.
func (s *stripes) tryLock(id string) (func(), bool) {
	m := &s.locks[maphash.String(s.seed, id)%lockStripes]
	if !m.TryLock() {
		return nil, false
	}
	return m.Unlock, true
}

// lock takes the lock of id's stripe and returns its unlock.
func (s *stripes) lock(id string) func() {
	m := &s.locks[maphash.String(s.seed, id)%lockStripes]
	m.Lock()
	return m.Unlock
}

// replaceLoop runs read → change → conditional replace until the replace lands. step reads the
// document, applies the change and returns the document to store and the version it read; a
// nil document means there is nothing to write. When another writer won (the version moved),
// it waits a moment and runs step again. It returns step's error, or conflict when retries run
// out. The caller holds the document's stripe lock.
func replaceLoop(ctx context.Context, srv *mongox.Server, coll *mongo.Collection, id string, conflict error, step func() (any, int64, error)) error {
	for attempt := range maxUpdateAttempts {
		next, version, err := step()
		if err != nil || next == nil {
			return err
		}
		res, err := coll.ReplaceOne(ctx, srv.VersionFilter(ctx, id, "version", version), next)
		if err != nil {
			return fmt.Errorf("replace %s %s: %w", coll.Name(), id, err)
		}
		if res.MatchedCount == 1 {
			return nil
		}
		// Lost the race.
		if err := pauseAfterConflict(ctx, attempt); err != nil {
			return err
		}
	}
	return conflict
}

// pauseAfterConflict waits a short random time, growing with attempt, after a write lost an
// optimistic-concurrency race, so writers that collided do not collide again in lockstep.
func pauseAfterConflict(ctx context.Context, attempt int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 5)))):
		return nil
	}
}

// timePtr returns nil for the zero time, so "none" is stored as null.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// timeOf returns the time p points at, or the zero time.
func timeOf(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}

// findByID reads the document with the given _id, or returns notFound.
func findByID[T any](ctx context.Context, coll *mongo.Collection, id string, notFound error) (T, error) {
	var d T
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return d, notFound
	}
	if err != nil {
		return d, fmt.Errorf("find %s %s: %w", coll.Name(), id, err)
	}
	return d, nil
}
