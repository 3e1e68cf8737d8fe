package docstore_test

import (
	"sync"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/docstore"
)

// A stamp only moves forward, whatever order its writers arrive in, and concurrent first
// writes of one id (two upserts both inserting) all land.
func TestStamps(t *testing.T) {
	db, err := docstore.Open(t.Context(), testkit.MongoDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	s := db.Stamps("key_usage", "last_used")
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if got, err := s.Get(ctx, "key_none"); err != nil || !got.IsZero() {
		t.Fatalf("Get of no stamp = %v, %v", got, err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := s.Advance(ctx, "key_1", t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := s.Advance(ctx, "key_1", t0.Add(-time.Hour)); err != nil { // late, older
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "key_1"); err != nil || !got.Equal(t0.Add(7*time.Second)) {
		t.Fatalf("key_1 = %v, %v; want the latest, %v", got, err, t0.Add(7*time.Second))
	}
	if err := s.Advance(ctx, "key_2", t0); err != nil {
		t.Fatal(err)
	}
	all, err := s.GetAll(ctx, []string{"key_1", "key_2", "key_none"})
	if err != nil || len(all) != 2 || !all["key_1"].Equal(t0.Add(7*time.Second)) || !all["key_2"].Equal(t0) {
		t.Fatalf("GetAll = %v, %v", all, err)
	}
}
