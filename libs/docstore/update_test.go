package docstore

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
)

type counter struct {
	Meta  `bson:",inline"`
	N     int   `bson:"n"`
	Added []int `bson:"added"`
}

// queued returns how many writers wait for the document, and whether one is applying.
func (c *Collection[T]) queued(id string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.queues[id]; ok {
		return len(q.ops), true
	}
	return 0, false
}

// The updates that queue while a write is in flight are applied in turn and stored by one
// write; one that fails is undone without taking the others with it, and every caller gets its
// own outcome.
func TestQueuedUpdatesShareOneWrite(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), testkit.MongoDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollection[counter](db, "counters", Options{})
	ctx := t.Context()
	if _, err := c.Insert(ctx, counter{Meta: Meta{ID: "c"}}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := c.Update(ctx, "c", func(d *counter) error { <-release; d.N++; d.Added = append(d.Added, 0); return nil })
		first <- err
	}()
	for n, busy := c.queued("c"); n != 0 || !busy; n, busy = c.queued("c") { // the first update leads
		time.Sleep(time.Millisecond)
	}
	const n = 10
	refused := errors.New("refused")
	results := make([]error, n)
	docs := make([]counter, n)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			docs[i-1], results[i-1] = c.Update(ctx, "c", func(d *counter) error {
				d.N++
				d.Added = append(d.Added, i)
				if i == 5 {
					return refused // half-changed, then refused: undone
				}
				return nil
			})
		})
		for n, _ := c.queued("c"); n != i; n, _ = c.queued("c") {
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, err := range results {
		if want := error(nil); i+1 == 5 {
			if !errors.Is(err, refused) {
				t.Fatalf("update 5: %v, want its own error", err)
			}
		} else if err != want {
			t.Fatalf("update %d: %v", i+1, err)
		}
	}
	got, err := c.Get(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10}; got.N != n || !slices.Equal(got.Added, want) {
		t.Fatalf("stored %+v: want 0 and 1..10 without 5, applied in turn", got)
	}
	// Version 1 inserted, 2 the first update, 3 the nine queued ones in one write.
	if got.Version != 3 {
		t.Fatalf("version %d: the queued updates took %d writes, want 1", got.Version, got.Version-2)
	}
	for i, d := range docs {
		if i+1 != 5 && (d.N != n || d.Version != 3) {
			t.Fatalf("update %d returned %+v, want the document as stored", i+1, d)
		}
	}
	if _, busy := c.queued("c"); busy {
		t.Fatal("the document's queue was left behind")
	}
}
