package docstore

import (
	"context"
	"errors"
	"sync"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// maxBatch bounds the writes of one command. FerretDB v1 keeps the query under each statement of
// an update command open until the whole command ends (its handler defers the close inside the
// statement loop), one SQLite connection each, and a database has 100: an update command of
// 100 statements waits forever for a connection for its last one, holding the database's
// write gate, and every write of the database stops (seen under the delivery bench). 64 leaves
// room for the queries running beside it.
const maxBatch = 64

// errNoMatch is returned for an update or replace that matched no document: its filter no
// longer holds (the document was removed meanwhile).
var errNoMatch = errors.New("docstore: no document matched the write's filter")

// batcher writes to one collection with group commit: writes that arrive while a command is
// running are sent together, in the next command (an unordered bulk write). A lone write goes
// out at once, so batching costs no latency when the store is idle and saves most of the
// per-command cost when it is busy (on the embedded store a write in a batch costs a fraction
// of one alone: docs/architecture.md, "What one operation costs").
//
// Each write reports its own outcome. A batch whose updates did not all match has its updates
// sent again one at a time, so every caller learns whether its own matched (errNoMatch): the
// rare case of a document removed meanwhile. Updates must therefore be safe to repeat (see
// send).
type batcher struct {
	coll *mongo.Collection

	mu      sync.Mutex
	queue   []*batchItem
	leading bool
}

type batchItem struct {
	model mongo.WriteModel
	done  chan itemResult
}

type itemResult struct {
	err  error
	lead bool // the receiver is to send the queued writes
}

// newBatcher returns a batcher writing to coll.
func newBatcher(coll *mongo.Collection) *batcher { return &batcher{coll: coll} }

// write sends model (an insert, replace, update or delete model) in the next command and
// returns its outcome: nil, errNoMatch for an update or replace that matched nothing, a
// duplicate-key error for an insert, or the store's error.
func (b *batcher) write(ctx context.Context, model mongo.WriteModel) error {
	return b.writeAll(ctx, []mongo.WriteModel{model})[0]
}

// writeAll is write for several models, queued together; it returns each one's outcome.
func (b *batcher) writeAll(ctx context.Context, models []mongo.WriteModel) []error {
	if len(models) == 0 {
		return nil // taking the lead with nothing queued would keep it from everyone else
	}
	items := make([]*batchItem, len(models))
	for i, m := range models {
		items[i] = &batchItem{model: m, done: make(chan itemResult, 1)}
	}
	b.mu.Lock()
	b.queue = append(b.queue, items...)
	lead := !b.leading
	b.leading = true
	b.mu.Unlock()
	errs := make([]error, len(items))
	for i, it := range items {
		for {
			if lead {
				b.flush(ctx)
				lead = false
			}
			// The result may have been delivered by the flush just run (this item was in it)
			// or arrive from another leader; or this item is asked to lead the next batch.
			// Leadership only goes to the first item still queued, so it never waits on an
			// item of this call later than the one awaited here.
			r := <-it.done
			if !r.lead {
				errs[i] = r.err
				break
			}
			lead = true
		}
	}
	return errs
}

// flush sends one batch from the queue, then hands leadership to the first item still queued,
// or gives it up when the queue is empty.
func (b *batcher) flush(ctx context.Context) {
	b.mu.Lock()
	n := min(len(b.queue), maxBatch)
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	b.mu.Unlock()

	errs := b.send(context.WithoutCancel(ctx), batch)
	for i, it := range batch {
		it.done <- itemResult{err: errs[i]}
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.leading = false
		return
	}
	b.queue[0].done <- itemResult{lead: true}
}

// send runs batch as one unordered bulk write and returns each write's outcome.
func (b *batcher) send(ctx context.Context, batch []*batchItem) []error {
	models := make([]mongo.WriteModel, len(batch))
	updates := 0
	for i, it := range batch {
		models[i] = it.model
		if isUpdate(it.model) {
			updates++
		}
	}
	res, err := b.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	errs := eachError(err, len(batch))
	if err != nil && !isPerWrite(err) {
		return errs
	}
	failed := 0 // updates that failed outright, which match nothing
	for i, e := range errs {
		if e != nil && isUpdate(batch[i].model) {
			failed++
		}
	}
	if updates == 0 || (res != nil && res.MatchedCount+int64(failed) >= int64(updates)) {
		return errs
	}
	// Some update matched nothing, and the bulk result does not say which: send them again one by
	// one. An update that did match is sent twice, so batched updates must be safe to repeat
	// and still match once applied (a replace by _id alone is; a replace conditional on a
	// version it changes is not).
	for i, it := range batch {
		if errs[i] != nil {
			continue
		}
		var r *mongo.UpdateResult
		switch m := it.model.(type) {
		case *mongo.ReplaceOneModel:
			r, err = b.coll.ReplaceOne(ctx, m.Filter, m.Replacement)
		case *mongo.UpdateOneModel:
			r, err = b.coll.UpdateOne(ctx, m.Filter, m.Update)
		default:
			continue
		}
		switch {
		case err != nil:
			errs[i] = err
		case r.MatchedCount == 0:
			errs[i] = errNoMatch
		}
	}
	return errs
}

func isUpdate(m mongo.WriteModel) bool {
	switch m.(type) {
	case *mongo.ReplaceOneModel, *mongo.UpdateOneModel:
		return true
	}
	return false
}

// eachError spreads the error of an unordered bulk write of n writes over them: the write
// errors of a BulkWriteException to the writes they name, any other error to every write.
func eachError(err error, n int) []error {
	errs := make([]error, n)
	var bwe mongo.BulkWriteException
	switch {
	case err == nil:
	case isPerWrite(err) && errors.As(err, &bwe):
		for _, we := range bwe.WriteErrors {
			if we.Index >= 0 && we.Index < n {
				errs[we.Index] = we
			}
		}
	default:
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// isPerWrite reports whether err is about some of a bulk write's writes, not the whole of it.
func isPerWrite(err error) bool {
	var bwe mongo.BulkWriteException
	return errors.As(err, &bwe) && bwe.WriteConcernError == nil
}
