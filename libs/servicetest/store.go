package servicetest

import (
	"testing"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/docstore"
)

// Store returns a database of the test's own (the embedded store, or MONGODB_URI's server),
// opened as a service opens its own, for the tests of a service's Mongo adapter.
func Store(t testing.TB) *docstore.DB {
	t.Helper()
	db, err := docstore.Open(t.Context(), testkit.MongoDatabase(t))
	if err != nil {
		t.Fatalf("servicetest: open the store: %v", err)
	}
	t.Cleanup(func() {
		// On the embedded store, a query the collection's in-memory index cannot serve is
		// evaluated over the whole collection: seconds once it holds thousands of documents.
		if u := db.Unserved(); len(u) > 0 {
			t.Errorf("queries left to a scan of the whole collection on the embedded store (declare an index on their fields): %v", u)
		}
	})
	return db
}

// IndexNames returns the names of the indexes the store holds on collection coll.
func IndexNames(t testing.TB, db *docstore.DB, coll string) []string {
	t.Helper()
	cur, err := db.Collection(coll).Indexes().List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var specs []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(t.Context(), &specs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}
