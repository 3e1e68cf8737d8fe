package docstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/domainerr"
)

// Errors the store returns when a collection's Options name none of their own. ErrConflict is
// domainerr's lock timeout (409 lock_timeout at the port), which errors.Is matches with any
// collection's own.
var (
	ErrNotFound = errors.New("docstore: no such document")
	ErrConflict = domainerr.ErrLockTimeout
)

// DB is one service's database, with the strategy its server needs.
type DB struct {
	db       *mongo.Database
	strategy strategy
	indexes  *indexRegistry // the query indexes of its collections, where the strategy keeps them
}

// Open asks the server what it is (one buildInfo command) and returns the database with the
// strategy for it. FerretDB names itself in buildInfo; anything else is taken for MongoDB.
func Open(ctx context.Context, db *mongo.Database) (*DB, error) {
	var info bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return nil, fmt.Errorf("docstore: ask the server what it is (buildInfo): %w", err)
	}
	if _, ferret := info["ferretdbVersion"]; ferret {
		return &DB{db: db, strategy: embedded{}, indexes: &indexRegistry{}}, nil
	}
	return &DB{db: db, strategy: mongoDB{}}, nil
}

// Sibling returns another database of the same server (and client), with the same strategy:
// for data a service keeps apart from its own, such as a simulated external system's.
func (d *DB) Sibling(name string) *DB {
	s := &DB{db: d.db.Client().Database(name), strategy: d.strategy}
	if d.indexes != nil {
		s.indexes = &indexRegistry{}
	}
	return s
}

// Database is the database itself, for what is not an aggregate (the adapter's own queries
// and collections).
func (d *DB) Database() *mongo.Database { return d.db }

// MultiProcess reports whether several processes may write one document of this database
// safely: true on MongoDB, where a conditional replace is atomic; false on the embedded store,
// which is one process's. Tests of cross-process races skip where it is false.
func (d *DB) MultiProcess() bool { return d.strategy.multiProcess() }

// strategy is everything that differs between the servers. It is chosen once, in Open.
type strategy interface {
	// writer returns how writes reach coll.
	writer(coll *mongo.Collection) writer
	// multiProcess: see DB.MultiProcess.
	multiProcess() bool
	// createsIndex reports whether an index is worth creating: one queries can use, or a unique
	// one (which every server enforces).
	createsIndex(unique bool) bool
	// idempotencyIndex is the unique index on (account, livemode, create_key) of the
	// documents that have the key (idempotent.go).
	idempotencyIndex() mongo.IndexModel
	// ttlIndexes reports whether the server expires documents by a TTL index.
	ttlIndexes() bool
	// tracksPending reports whether the collections keep in memory which documents' outboxes
	// hold events (pending.go) and clear published ones there, leaving them stored until the
	// document's next write (marks.go): only where one process owns the data.
	tracksPending() bool
	// holdsQueries reports whether the collections answer queries from the fields of their
	// documents held in memory (queryindex.go): where the server scans the whole collection
	// for any filter but {_id}, and one process owns the data.
	holdsQueries() bool
}

// writer stores documents. Every method reports whether its write landed: false when the
// document read at version is no longer the stored one (another writer won, or it is gone).
type writer interface {
	insert(ctx context.Context, docs []bson.Raw) []error
	replace(ctx context.Context, id string, version int64, doc bson.Raw) (bool, error)
	remove(ctx context.Context, id string, version int64) (bool, error)
}

// mongoDB is the strategy for MongoDB: conditional writes are atomic compare-and-sets, and
// several processes (replicas, and the relays of each) share the data.
type mongoDB struct{}

func (mongoDB) multiProcess() bool            { return true }
func (mongoDB) createsIndex(unique bool) bool { return true }
func (mongoDB) ttlIndexes() bool              { return true }
func (mongoDB) tracksPending() bool           { return false }
func (mongoDB) holdsQueries() bool            { return false }
func (mongoDB) writer(coll *mongo.Collection) writer {
	return direct{coll: coll}
}

// idempotencyIndex is partial: MongoDB indexes a missing field as null, and every document
// created without a key would collide with the others of its owner.
func (mongoDB) idempotencyIndex() mongo.IndexModel {
	m := idempotencyIndexModel()
	m.Options.SetPartialFilterExpression(bson.D{{Key: idempotencyField, Value: bson.D{{Key: "$exists", Value: true}}}})
	return m
}

// embedded is the strategy for the embedded store (FerretDB v1, SQLite). It evaluates a
// filter other than exactly {_id: value} in Go over the whole collection, between its read
// and its write: a conditional replace there is neither atomic nor index-backed. One process
// owns its data and serialises the writers of each document (see queue.go), so what the process
// read is what is stored, and writes by _id alone are correct. SQLite has one writer per
// database, and a write costs much less in a batch than alone, so writes are group-committed. It
// uses no secondary index for a query (only unique indexes are worth their cost on every
// write), and refuses TTL indexes.
type embedded struct{}

func (embedded) multiProcess() bool            { return false }
func (embedded) createsIndex(unique bool) bool { return unique }
func (embedded) ttlIndexes() bool              { return false }
func (embedded) tracksPending() bool           { return true }
func (embedded) holdsQueries() bool            { return true }
func (embedded) writer(coll *mongo.Collection) writer {
	return grouped{coll: coll, batch: newBatcher(coll)}
}

// idempotencyIndex is a plain unique index: FerretDB v1 refuses partialFilterExpression, and
// needs none, since it indexes a missing field as SQL NULL, which a unique SQLite index never
// finds equal to another.
func (embedded) idempotencyIndex() mongo.IndexModel { return idempotencyIndexModel() }

// byID is the filter of one document.
func byID(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }

// direct writes each document as it comes, on condition of the version read.
type direct struct{ coll *mongo.Collection }

// versioned is the filter of a write conditional on the version read. A document stored before
// the store versioned them has no version field: {version: null} matches it.
func versioned(id string, version int64) bson.D {
	if version == 0 {
		return bson.D{{Key: "_id", Value: id}, {Key: "version", Value: nil}}
	}
	return bson.D{{Key: "_id", Value: id}, {Key: "version", Value: version}}
}

func (w direct) insert(ctx context.Context, docs []bson.Raw) []error {
	if len(docs) == 1 {
		_, err := w.coll.InsertOne(ctx, docs[0])
		return []error{err}
	}
	_, err := w.coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	return eachError(err, len(docs))
}

func (w direct) replace(ctx context.Context, id string, version int64, doc bson.Raw) (bool, error) {
	res, err := w.coll.ReplaceOne(ctx, versioned(id, version), doc)
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

func (w direct) remove(ctx context.Context, id string, version int64) (bool, error) {
	res, err := w.coll.DeleteOne(ctx, versioned(id, version))
	if err != nil {
		return false, err
	}
	return res.DeletedCount == 1, nil
}

// grouped writes by _id alone, group-committing inserts and replaces (see batcher).
type grouped struct {
	coll  *mongo.Collection
	batch *batcher
}

func (w grouped) insert(ctx context.Context, docs []bson.Raw) []error {
	models := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		models[i] = mongo.NewInsertOneModel().SetDocument(d)
	}
	return w.batch.writeAll(ctx, models)
}

func (w grouped) replace(ctx context.Context, id string, _ int64, doc bson.Raw) (bool, error) {
	// By _id alone, which also makes the write safe to repeat, as the batcher may.
	err := w.batch.write(ctx, mongo.NewReplaceOneModel().SetFilter(byID(id)).SetReplacement(doc))
	if errors.Is(err, errNoMatch) {
		return false, nil
	}
	return err == nil, err
}

func (w grouped) remove(ctx context.Context, id string, _ int64) (bool, error) {
	res, err := w.coll.DeleteOne(ctx, byID(id))
	if err != nil {
		return false, err
	}
	return res.DeletedCount == 1, nil
}

// maxUpdateAttempts bounds the optimistic-concurrency retries of one update. Every lost race
// means another writer won, so this only runs out under heavy contention on one document
// across processes (within one, writers of a document queue instead of racing).
const maxUpdateAttempts = 20

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
