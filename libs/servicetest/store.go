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
	return db
}
