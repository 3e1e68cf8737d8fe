// Package mongox holds what every service does with MongoDB the same way: connecting with
// tracing, declaring indexes, and reading a keyset-paginated page.
package mongox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel/trace"

	"rentalplatform/libs/listing"
)

// Config says where a service's database is.
type Config struct {
	URI      string
	Database string
	AppName  string
	// TracerProvider, when set, traces every command (see NewMonitor).
	TracerProvider trace.TracerProvider
}

// Connect opens a client and returns it with the configured database. It does not wait for the
// server: readiness checks call Ping.
func Connect(cfg Config) (*mongo.Client, *mongo.Database, error) {
	if cfg.URI == "" || cfg.Database == "" {
		return nil, nil, errors.New("mongo: URI and database are required")
	}
	opts := options.Client().ApplyURI(cfg.URI).SetAppName(cfg.AppName).
		SetServerSelectionTimeout(5 * time.Second).SetConnectTimeout(5 * time.Second)
	if cfg.TracerProvider != nil {
		opts.SetMonitor(NewMonitor(cfg.TracerProvider))
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("mongo connect: %w", err)
	}
	return client, client.Database(cfg.Database), nil
}

// Ping checks that the server answers within ctx.
func Ping(ctx context.Context, db *mongo.Database) error {
	if err := db.Client().Ping(ctx, nil); err != nil {
		return fmt.Errorf("mongo ping: %w", err)
	}
	return nil
}

// EnsureIndexes creates the indexes a collection's queries rely on. Creating an index that
// already exists with the same definition is a no-op on the server. They are created one per
// command: the embedded store (FerretDB v1.24) fails a createIndexes naming several indexes
// that already exist, which is every start after the first. Where the server cannot use
// secondary indexes for queries (Capabilities.IndexedQueries), only the unique ones are
// created: the others would slow every write and speed up nothing.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, models ...mongo.IndexModel) error {
	caps, err := Detect(ctx, coll.Database())
	if err != nil {
		return fmt.Errorf("indexes on %s: %w", coll.Name(), err)
	}
	for _, m := range models {
		if !caps.IndexedQueries && !isUnique(m) {
			continue
		}
		if _, err := coll.Indexes().CreateOne(ctx, m); err != nil {
			return fmt.Errorf("indexes on %s: %w", coll.Name(), err)
		}
	}
	return nil
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

// IsDuplicateKey reports whether err is a unique-index violation.
func IsDuplicateKey(err error) bool { return mongo.IsDuplicateKeyError(err) }

// FindPage reads one page of a list, newest first by _id. filter must already scope the query
// to the account and mode (and any list filters); the cursor and created bounds are added here.
// It reads one document more than the page to learn has_more, which is about the direction
// read: older objects for a forward page, newer ones for an ending_before page.
func FindPage[T any](ctx context.Context, coll *mongo.Collection, filter bson.D, p listing.Params) ([]T, bool, error) {
	return FindPageOn[T](ctx, coll, "_id", filter, p)
}

// FindPageOn is FindPage keyed on another field holding the public, time-ordered id (for
// documents whose _id is something else, such as a hash). created bounds are compared as Unix
// seconds; a collection that stores created otherwise puts its own bounds in filter and passes
// p without them.
func FindPageOn[T any](ctx context.Context, coll *mongo.Collection, key string, filter bson.D, p listing.Params) ([]T, bool, error) {
	f := append(bson.D{}, filter...)
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
	opts := options.Find().SetSort(bson.D{{Key: key, Value: dir}}).SetLimit(int64(p.Limit + 1))
	cur, err := coll.Find(ctx, f, opts)
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", coll.Name(), err)
	}
	var items []T
	if err := cur.All(ctx, &items); err != nil {
		return nil, false, fmt.Errorf("list %s: decode: %w", coll.Name(), err)
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
