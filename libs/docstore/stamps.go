package docstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Stamps keeps, per id, the latest of the times written for it (an API key's last use) in a
// collection of its own, one document per id: {_id, <field>}. It is written on the request
// path by every replica, so unlike a Collection's documents it is not versioned: each write is
// one upsert with $max, which keeps writers that arrive out of order from moving a stamp back,
// and never conflicts with the versioned writes of the object it is about.
type Stamps struct {
	coll  *mongo.Collection
	field string
}

// Stamps returns the stamps kept in collection name, under field.
func (d *DB) Stamps(name, field string) *Stamps {
	return &Stamps{coll: d.Collection(name), field: field}
}

// Advance sets id's stamp to at unless it is later already.
func (s *Stamps) Advance(ctx context.Context, id string, at time.Time) error {
	advance := func() error {
		_, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
			bson.D{{Key: "$max", Value: bson.D{{Key: s.field, Value: at.UTC()}}}},
			options.UpdateOne().SetUpsert(true))
		return err
	}
	err := advance()
	// Two upserts of a missing document can both try to insert it; the loser finds it now
	// exists and updates it.
	if mongo.IsDuplicateKeyError(err) {
		err = advance()
	}
	if err != nil {
		return fmt.Errorf("advance %s of %s: %w", s.field, id, err)
	}
	return nil
}

// Get returns id's stamp; zero when it has none.
func (s *Stamps) Get(ctx context.Context, id string) (time.Time, error) {
	var doc bson.Raw
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read %s of %s: %w", s.field, id, err)
	}
	return s.stamp(doc), nil
}

// GetAll returns the stamps of ids, in one query; an id with none is left out.
func (s *Stamps) GetAll(ctx context.Context, ids []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cur, err := s.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.field, err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read %s: decode: %w", s.field, err)
	}
	for _, d := range docs {
		if id, ok := d.Lookup("_id").StringValueOK(); ok {
			out[id] = s.stamp(d)
		}
	}
	return out, nil
}

func (s *Stamps) stamp(doc bson.Raw) time.Time {
	if dt, ok := doc.Lookup(s.field).DateTimeOK(); ok {
		return time.UnixMilli(dt).UTC()
	}
	return time.Time{}
}
