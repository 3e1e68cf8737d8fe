package mongox

import (
	"context"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Capabilities describe where the server behaves differently from MongoDB.
type Capabilities struct {
	// AtomicConditionalWrites is true on MongoDB: a write filtered on {_id, version} is an
	// atomic compare-and-set. The embedded store (FerretDB v1) evaluates such a filter in Go,
	// between its read and its write, over the whole collection: it is neither atomic nor
	// index-backed (only a filter that is exactly {_id: value} reaches SQLite's index).
	AtomicConditionalWrites bool

	// IndexedQueries is true on MongoDB: secondary indexes serve queries and sorts. The
	// embedded store's SQLite backend hands SQLite only a filter that is exactly {_id: value}
	// (and no sort); every other query reads the whole collection in Go, so a secondary index
	// there is only work: each write re-evaluates every indexed JSON path (6 indexes made a
	// replace by _id 30 % slower and an insert twice as slow, BenchmarkOps). Unique indexes
	// are still enforced by it and are always created.
	IndexedQueries bool
}

// Detect asks the server what it is. FerretDB names itself in buildInfo.
func Detect(ctx context.Context, db *mongo.Database) (Capabilities, error) {
	var info bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return Capabilities{}, fmt.Errorf("mongo buildInfo: %w", err)
	}
	_, ferret := info["ferretdbVersion"]
	return Capabilities{AtomicConditionalWrites: !ferret, IndexedQueries: !ferret}, nil
}

// Server remembers a database's capabilities, detected on first use. Until detection succeeds
// it assumes MongoDB's behaviour, which is correct on every store (only slower on FerretDB).
type Server struct {
	db   *mongo.Database
	mu   sync.Mutex
	caps *Capabilities
}

// NewServer returns a Server for db.
func NewServer(db *mongo.Database) *Server { return &Server{db: db} }

// Capabilities returns the detected capabilities.
func (s *Server) Capabilities(ctx context.Context) Capabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caps == nil {
		c, err := Detect(ctx, s.db)
		if err != nil {
			return Capabilities{AtomicConditionalWrites: true, IndexedQueries: true}
		}
		s.caps = &c
	}
	return *s.caps
}

// VersionFilter returns the filter of a compare-and-set write of the document id read at
// version. On MongoDB it is {_id, version}, atomic across processes. On the embedded store it
// is {_id} alone: there the conditional form is not atomic anyway and costs a scan of the whole
// collection, so writers of one document must be serialised in-process (they are: see the
// repositories' striped locks), which the embedded store's single process makes sufficient.
func (s *Server) VersionFilter(ctx context.Context, id any, versionField string, version int64) bson.D {
	if s.Capabilities(ctx).AtomicConditionalWrites {
		return bson.D{{Key: "_id", Value: id}, {Key: versionField, Value: version}}
	}
	return bson.D{{Key: "_id", Value: id}}
}
