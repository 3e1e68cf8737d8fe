package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Server error codes met when declaring a TTL index.
const (
	codeNotImplemented       = 238 // FerretDB v1: expireAfterSeconds is not implemented
	codeIndexOptionsConflict = 85  // an index of that name exists with another expireAfterSeconds
)

// ensureTTL declares a TTL index on field, expiring documents ttl after the date it holds, and
// reports whether the store supports TTL indexes. The embedded store (FerretDB v1.24) refuses
// them with NotImplemented: that is not an error, retention then rests on the periodic purge
// alone (which runs everywhere). When the index exists with another period (the retention was
// reconfigured), the period is changed in place.
func ensureTTL(ctx context.Context, coll *mongo.Collection, name, field string, ttl time.Duration) (bool, error) {
	secs := int32(min(ttl/time.Second, 1<<31-1))
	_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: field, Value: 1}},
		Options: options.Index().SetName(name).SetExpireAfterSeconds(secs),
	})
	var se mongo.ServerError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &se) && se.HasErrorCode(codeNotImplemented):
		return false, nil
	case errors.As(err, &se) && se.HasErrorCode(codeIndexOptionsConflict):
		err = coll.Database().RunCommand(ctx, bson.D{
			{Key: "collMod", Value: coll.Name()},
			{Key: "index", Value: bson.D{{Key: "name", Value: name}, {Key: "expireAfterSeconds", Value: secs}}},
		}).Err()
		if err != nil {
			return true, fmt.Errorf("change TTL of %s.%s: %w", coll.Name(), name, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("TTL index on %s.%s: %w", coll.Name(), field, err)
}
