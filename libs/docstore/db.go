package docstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
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
	// inPlace: on the embedded store, the collections found in the database itself when it was
	// opened, which stay there (see Collection); nil on MongoDB.
	inPlace map[string]bool
}

// Open asks the server what it is (one buildInfo command) and returns the database with the
// strategy for it. FerretDB names itself in buildInfo; anything else is taken for MongoDB.
func Open(ctx context.Context, db *mongo.Database) (*DB, error) {
	var info bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return nil, fmt.Errorf("docstore: ask the server what it is (buildInfo): %w", err)
	}
	if _, ferret := info["ferretdbVersion"]; !ferret {
		return &DB{db: db, strategy: mongoDB{}}, nil
	}
	d := &DB{db: db, strategy: embedded{}, indexes: &indexRegistry{}}
	if err := d.findInPlace(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// Sibling returns another database of the same server (and client), with the same strategy:
// for data a service keeps apart from its own, such as a simulated external system's.
func (d *DB) Sibling(ctx context.Context, name string) (*DB, error) {
	s := &DB{db: d.db.Client().Database(name), strategy: d.strategy}
	if d.indexes == nil {
		return s, nil
	}
	s.indexes = &indexRegistry{}
	if err := s.findInPlace(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// findInPlace records the collections the database itself holds: stored before the embedded
// store kept each collection in a database of its own, they stay where they are.
func (d *DB) findInPlace(ctx context.Context) error {
	names, err := d.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("docstore: list the collections of %s: %w", d.db.Name(), err)
	}
	d.inPlace = make(map[string]bool, len(names))
	for _, n := range names {
		d.inPlace[n] = true
	}
	return nil
}

// Database is the database itself: for commands that name no collection (a ping). Reach a
// collection through Collection, which knows where it is stored.
func (d *DB) Database() *mongo.Database { return d.db }

// Collection returns the stored collection name of this database, where the server keeps it.
//
// On MongoDB that is the database itself. On the embedded store each collection is a database
// of its own (EmbeddedDatabase), unless the database already held it when it was opened (a
// store created before this layout keeps its data where it is).
//
// Why: the embedded store keeps a database in one SQLite file, and SQLite lets one write at a
// time into a file. With every collection of a service in one file, webhooks-svc's event
// rewrites, delivery inserts and outbox marks queued behind one another: under a saturated
// delivery run the file's write lane was held 85-96 % of the time while a third of a core sat
// idle (docs/architecture.md, "What the embedded store costs"). One file per collection gives
// each its own lane. Nothing here writes two collections in one command, so nothing relied on
// their sharing a file.
func (d *DB) Collection(name string) *mongo.Collection {
	return d.home(name, name).Collection(name)
}

// home is the database that holds what is stored under name, found by the name of its first
// collection (first): the collection itself, or a bucket's two, which stay together so that
// GridFS tools read them.
func (d *DB) home(name, first string) *mongo.Database {
	if d.inPlace == nil || d.inPlace[first] {
		return d.db
	}
	return d.db.Client().Database(EmbeddedDatabase(d.db.Name(), name))
}

// databaseName is what FerretDB accepts as a database name.
var databaseName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,63}$`)

// EmbeddedDatabase is the name of the database the embedded store keeps collection (or
// bucket) coll of database db in: "<db>-<coll>", with a dot in coll written as a dash. A name
// FerretDB would refuse (longer than 63 characters, or another character) is shortened to its
// first 46 characters, others made underscores, and a hash of the whole.
func EmbeddedDatabase(db, coll string) string {
	name := db + "-" + strings.ReplaceAll(coll, ".", "-")
	if databaseName.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(db + "\x00" + coll))
	keep := strings.Map(func(r rune) rune {
		if r < 0x80 && databaseName.MatchString(string(r)) {
			return r
		}
		return '_'
	}, name)
	if len(keep) > 46 {
		keep = keep[:46]
	}
	return keep + "-" + hex.EncodeToString(sum[:8])
}

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
// write), refuses TTL indexes, and stores large packed arrays compressed (compressPacked).
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
		stored, err := compressPacked(d)
		if err != nil {
			errs := make([]error, len(docs))
			for j := range errs {
				errs[j] = err
			}
			return errs
		}
		models[i] = mongo.NewInsertOneModel().SetDocument(stored)
	}
	return w.batch.writeAll(ctx, models)
}

func (w grouped) replace(ctx context.Context, id string, _ int64, doc bson.Raw) (bool, error) {
	stored, err := compressPacked(doc)
	if err != nil {
		return false, err
	}
	// By _id alone, which also makes the write safe to repeat, as the batcher may.
	err = w.batch.write(ctx, mongo.NewReplaceOneModel().SetFilter(byID(id)).SetReplacement(stored))
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
