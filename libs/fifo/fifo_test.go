package fifo

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestMapForgetsTheOldestFirst(t *testing.T) {
	t.Parallel()
	m := New[string, int](3)
	for i, k := range []string{"a", "b", "c"} {
		m.Put(k, i)
	}
	m.Put("a", 10) // a rewrite keeps its place
	m.Put("d", 3)  // drops a, the oldest put
	if _, ok := m.Get("a"); ok {
		t.Fatal("a was kept past the bound")
	}
	for k, want := range map[string]int{"b": 1, "c": 2, "d": 3} {
		if v, ok := m.Get(k); !ok || v != want {
			t.Fatalf("Get(%s) = %d, %v; want %d", k, v, ok, want)
		}
	}
	if m.Len() != 3 {
		t.Fatalf("Len = %d, want 3", m.Len())
	}
}

// A key deleted and put again is not dropped when its old place comes round.
func TestMapDeletedKeyPutAgain(t *testing.T) {
	t.Parallel()
	m := New[string, int](3)
	m.Put("a", 1)
	m.Put("b", 2)
	m.Delete("a")
	m.Put("a", 3) // a new place, after b
	m.Put("c", 4) // fills the ring
	m.Put("d", 5) // recycles a's old place: a stays
	if v, ok := m.Get("a"); !ok || v != 3 {
		t.Fatalf("Get(a) = %d, %v; want 3 (its old place was recycled, not its new one)", v, ok)
	}
	m.Clear()
	if m.Len() != 0 {
		t.Fatal("Clear kept entries")
	}
	m.Put("e", 6)
	if v, _ := m.Get("e"); v != 6 {
		t.Fatal("a cleared map does not take new entries")
	}
}

func TestMapConcurrentUseStaysBounded(t *testing.T) {
	t.Parallel()
	m := New[string, int](64)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := 0; i < 1000; i++ {
				k := fmt.Sprintf("%d-%d", w, i)
				m.Put(k, i)
				m.Get(k)
				if i%7 == 0 {
					m.Delete(k)
				}
			}
		})
	}
	wg.Wait()
	if n := m.Len(); n > 64 {
		t.Fatalf("%d entries, bound 64", n)
	}
}

// An aged map forgets a key its age after it was put, and frees its place.
func TestAgedMapForgetsOldKeys(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	m := NewAged[string, int](10, time.Minute, func() time.Time { return now })
	m.Put("a", 1)
	now = now.Add(30 * time.Second)
	m.Put("b", 2)
	m.Put("a", 3) // a rewrite keeps its place and its age
	now = now.Add(31 * time.Second)
	if _, ok := m.Get("a"); ok {
		t.Fatal("a kept past its age")
	}
	if v, ok := m.Get("b"); !ok || v != 2 {
		t.Fatalf("Get(b) = %d, %v; want 2", v, ok)
	}
	m.Put("c", 4) // drops a
	if m.Len() != 2 {
		t.Fatalf("Len = %d after a Put; want 2 (b, c)", m.Len())
	}
	now = now.Add(time.Hour)
	m.Put("d", 5)
	if m.Len() != 1 {
		t.Fatalf("Len = %d an hour later; want 1 (d)", m.Len())
	}
	// Still bounded by its size.
	for i := range 25 {
		m.Put(fmt.Sprint(i), i)
	}
	if m.Len() != 10 {
		t.Fatalf("Len = %d, bound 10", m.Len())
	}
	if _, ok := m.Get("24"); !ok {
		t.Fatal("the newest key is missing")
	}
}
