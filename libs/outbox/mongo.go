package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/mongox"
)

// Field names an aggregate document uses for its outbox. OutboxSince is set when the outbox
// goes from empty to not empty and unset when it is emptied, so the relay finds waiting events
// with one comparison on a top-level, indexable field.
const (
	FieldOutbox      = "outbox"
	FieldOutboxSince = "outbox_since"
)

// Append returns the outbox and outbox_since an aggregate should store after adding docs.
func Append(outbox []Doc, since *time.Time, now time.Time, docs ...Doc) ([]Doc, *time.Time) {
	if len(docs) == 0 {
		return outbox, since
	}
	if since == nil || len(outbox) == 0 {
		since = &now
	}
	return append(outbox, docs...), since
}

// MongoStore is a Store over a collection whose documents carry `outbox` and `outbox_since`.
type MongoStore struct {
	Coll *mongo.Collection
	// Lock, when set, serialises Clear with the repository's own writes of the same document.
	// The embedded store (FerretDB v1) does not apply concurrent updates of one document
	// atomically, so within a process every writer of a document must take the same lock.
	Lock func(id string) (unlock func())
	// Tombstone names a boolean field marking soft-deleted aggregates: once their outbox is
	// empty (their deletion event is out) the document is removed.
	Tombstone string
	// Server, when set, tells whether conditional writes are atomic. Where they are not (the
	// embedded store, which also scans the whole collection for any filter beyond _id), Clear
	// checks the outbox in code and writes by _id alone, relying on Lock.
	Server *mongox.Server
}

// EnsureIndexes declares the index the relay's scan uses.
func (s MongoStore) EnsureIndexes(ctx context.Context) error {
	return mongox.EnsureIndexes(ctx, s.Coll, mongo.IndexModel{
		Keys:    bson.D{{Key: FieldOutboxSince, Value: 1}},
		Options: options.Index().SetName("outbox_since").SetSparse(true),
	})
}

// Pending implements Store.
func (s MongoStore) Pending(ctx context.Context, before time.Time, limit int) ([]Batch, error) {
	cur, err := s.Coll.Find(ctx,
		bson.D{{Key: FieldOutboxSince, Value: bson.D{{Key: "$lte", Value: before}}}},
		options.Find().SetProjection(bson.D{{Key: FieldOutbox, Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("outbox pending in %s: %w", s.Coll.Name(), err)
	}
	var docs []struct {
		ID     string `bson:"_id"`
		Outbox []Doc  `bson:"outbox"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("outbox pending in %s: decode: %w", s.Coll.Name(), err)
	}
	out := make([]Batch, 0, len(docs))
	for _, d := range docs {
		out = append(out, Batch{AggregateID: d.ID, Docs: d.Outbox})
	}
	return out, nil
}

// Clear implements Store: a $pullAll of the published events, which leaves events appended
// meanwhile in place, then outbox_since is unset only if the outbox is now empty. Elements are
// matched whole (the only $pull form the embedded store supports; exact on MongoDB too, since a
// Doc always encodes the same way).
func (s MongoStore) Clear(ctx context.Context, aggregateID string, docs []Doc) error {
	if s.Lock != nil {
		defer s.Lock(aggregateID)()
	}
	_, err := s.Coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: aggregateID}},
		bson.D{{Key: "$pullAll", Value: bson.D{{Key: FieldOutbox, Value: docs}}}})
	if err != nil {
		return fmt.Errorf("outbox clear %s: %w", aggregateID, err)
	}
	if s.Server != nil && !s.Server.Capabilities(ctx).AtomicConditionalWrites {
		return s.finishByID(ctx, aggregateID)
	}
	empty := bson.D{{Key: "_id", Value: aggregateID}, {Key: FieldOutbox, Value: bson.D{{Key: "$size", Value: 0}}}}
	if s.Tombstone != "" {
		res, err := s.Coll.DeleteOne(ctx, append(empty, bson.E{Key: s.Tombstone, Value: true}))
		if err != nil {
			return fmt.Errorf("outbox clear %s: remove tombstone: %w", aggregateID, err)
		}
		if res.DeletedCount == 1 {
			return nil
		}
	}
	if _, err := s.Coll.UpdateOne(ctx, empty, bson.D{{Key: "$unset", Value: bson.D{{Key: FieldOutboxSince, Value: ""}}}}); err != nil {
		return fmt.Errorf("outbox clear %s: %w", aggregateID, err)
	}
	return nil
}

// finishByID is the end of Clear where conditional writes are not atomic: read the document
// by _id, and if its outbox is empty remove the tombstone or unset outbox_since, by _id.
func (s MongoStore) finishByID(ctx context.Context, aggregateID string) error {
	byID := bson.D{{Key: "_id", Value: aggregateID}}
	var doc bson.M
	err := s.Coll.FindOne(ctx, byID).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("outbox clear %s: %w", aggregateID, err)
	}
	if pending, _ := doc[FieldOutbox].(bson.A); len(pending) > 0 {
		return nil
	}
	if dead, _ := doc[s.Tombstone].(bool); s.Tombstone != "" && dead {
		if _, err := s.Coll.DeleteOne(ctx, byID); err != nil {
			return fmt.Errorf("outbox clear %s: remove tombstone: %w", aggregateID, err)
		}
		return nil
	}
	if _, ok := doc[FieldOutboxSince]; ok {
		if _, err := s.Coll.UpdateOne(ctx, byID, bson.D{{Key: "$unset", Value: bson.D{{Key: FieldOutboxSince, Value: ""}}}}); err != nil {
			return fmt.Errorf("outbox clear %s: %w", aggregateID, err)
		}
	}
	return nil
}
