package docstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// AsMongoDB returns db with the MongoDB strategy whatever its server, so the contract suite
// runs that strategy's writes on the embedded store too: within one process they are correct
// there, since the writers of each document are serialised in-process; only the cross-process
// case needs a real MongoDB.
func AsMongoDB(db *DB) *DB { return &DB{db: db.db, strategy: mongoDB{}} }

// RememberRead is what a read from the store does to the cache.
func RememberRead[T any](c *Collection[T], id string, raw bson.Raw) { c.rememberRead(id, raw) }

// LandThenFail makes the collection's next replace or insert land and then report err, as a
// connection cut after the command was sent does.
func LandThenFail[T any](c *Collection[T], err error) { c.w = &landThenFail{writer: c.w, err: err} }

type landThenFail struct {
	writer
	err  error
	used bool
}

func (f *landThenFail) replace(ctx context.Context, id string, version int64, doc bson.Raw) (bool, error) {
	landed, err := f.writer.replace(ctx, id, version, doc)
	if err == nil && landed && !f.used {
		f.used = true
		return false, f.err
	}
	return landed, err
}

func (f *landThenFail) insert(ctx context.Context, docs []bson.Raw) []error {
	errs := f.writer.insert(ctx, docs)
	if !f.used {
		f.used = true
		for i := range errs {
			if errs[i] == nil {
				errs[i] = f.err
			}
		}
	}
	return errs
}
