package docstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/events"
)

// Exactly-once creates. The gateway keeps a request's answer under its Idempotency-Key only
// once the service answered; a service that dies mid-request (502) or answers too late (504)
// sees the client's retry run again. So a collection of IdempotentCreates stores the key in the
// document it creates, under a unique index on (account, livemode, create_key): the
// insert of a retry fails on the index in the same single-document write that would have
// stored it, so it stores nothing and raises no event, and InsertOnce answers with what the
// first request stored. That holds without transactions, on the embedded store and MongoDB
// alike, and costs the normal path nothing but the index: the lookup runs on a conflict only.

// idempotencyField is the stored name of Meta.IdempotencyKey.
const idempotencyField = "create_key"

// IdempotencyIndexName is the name of the index that makes creates exactly-once.
const IdempotencyIndexName = "account_livemode_create_key"

func idempotencyIndexModel() mongo.IndexModel {
	return mongo.IndexModel{
		Keys:    bson.D{{Key: "account", Value: 1}, {Key: "livemode", Value: 1}, {Key: idempotencyField, Value: 1}},
		Options: options.Index().SetName(IdempotencyIndexName).SetUnique(true),
	}
}

// idempotencyKey is the key the documents inserted under ctx store: the request's, in a
// collection of IdempotentCreates.
func (c *Collection[T]) idempotencyKey(ctx context.Context) string {
	if !c.opts.IdempotentCreates {
		return ""
	}
	return events.IdempotencyKey(ctx)
}

// keyOf is the key of the i-th of n documents a request with key creates: the key itself for a
// single one, "<key>#<i>" for each of a bulk create, so that each has one of its own.
func keyOf(key string, i, n int) string {
	if key == "" || n == 1 {
		return key
	}
	return key + "#" + strconv.Itoa(i)
}

// created returns the document the same request stored earlier under doc's owner and key (the
// insert of doc was refused by a unique index), found false when there is none: doc has no key,
// or it was refused for its _id or another unique value. A document of the key that is since
// deleted is returned as well: it was created by the request.
func (c *Collection[T]) created(ctx context.Context, doc *T) (T, bool, error) {
	var zero T
	key := metaOf(doc).IdempotencyKey
	if key == "" {
		return zero, false, nil
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		return zero, false, fmt.Errorf("encode %s %s: %w", c.coll.Name(), metaOf(doc).ID, err)
	}
	account, livemode := bson.Raw(raw).Lookup("account"), bson.Raw(raw).Lookup("livemode")
	if account.Type == 0 || livemode.Type == 0 {
		return zero, false, fmt.Errorf("docstore: %s stores no account and livemode for its idempotent creates", c.coll.Name())
	}
	found, err := c.coll.FindOne(ctx, bson.D{
		{Key: "account", Value: account}, {Key: "livemode", Value: livemode}, {Key: idempotencyField, Value: key},
	}).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, fmt.Errorf("find %s by idempotency key: %w", c.coll.Name(), err)
	}
	d, err := c.decode(found)
	if err != nil {
		return zero, false, err
	}
	return d, true, nil
}

// Insertion is what InsertOnce made of one aggregate.
type Insertion[A any] struct {
	// Stored is the aggregate stored: the one given when New; when Replay, the one the first
	// request with the same Idempotency-Key created; the one given, not stored, when neither.
	Stored A
	// New: the aggregate given was stored, with its events.
	New bool
	// Replay: the caller's Idempotency-Key had already created an aggregate of its owner;
	// nothing was stored and no event raised.
	Replay bool
}

// InsertOnce is InsertAll for the aggregates a caller's request creates, exactly once per
// Idempotency-Key (ctx's, see events.CausedBy) in a collection of IdempotentCreates: for an
// aggregate the key already created it answers with that one (Replay). One that is neither new
// nor a replay was refused for its id or another unique index's value.
func (m *Aggregates[D, A]) InsertOnce(ctx context.Context, as []A) ([]Insertion[A], error) {
	docs, created, err := m.insert(ctx, as)
	if err != nil {
		return nil, err
	}
	out := make([]Insertion[A], len(as))
	for i, a := range as {
		out[i] = Insertion[A]{Stored: a, New: created[i]}
		if created[i] {
			continue
		}
		d, found, err := m.Docs.created(ctx, &docs[i])
		if err != nil {
			return nil, err
		}
		if found {
			out[i] = Insertion[A]{Stored: m.Of(d), Replay: true}
		}
	}
	return out, nil
}
