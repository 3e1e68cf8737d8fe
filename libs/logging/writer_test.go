package logging

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowWriter records each write and takes a while over it, so that lines pile up meanwhile.
type slowWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(p)
}

func (s *slowWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Lines written at once by many goroutines all arrive after Flush, whole, each once, in
// fewer writes than lines; one goroutine's lines keep their order.
func TestLogWriter(t *testing.T) {
	w := &slowWriter{}
	l := NewLogWriter(w)
	const n, per = 100, 5
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				if _, err := l.Write([]byte(fmt.Sprintf("line %03d %d\n", i, j))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	l.Flush()
	out := w.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n*per {
		t.Fatalf("%d lines, want %d", len(lines), n*per)
	}
	for i := range n {
		last := -1
		for _, ln := range lines {
			var a, b int
			if _, err := fmt.Sscanf(ln, "line %d %d", &a, &b); err != nil {
				t.Fatalf("mangled line %q", ln)
			}
			if a == i {
				if b != last+1 {
					t.Fatalf("goroutine %d's lines out of order: %d after %d", i, b, last)
				}
				last = b
			}
		}
	}
	sort.Strings(lines)
	if w.writes >= n*per {
		t.Errorf("%d writes for %d lines written at once; want them batched", w.writes, n*per)
	}
	// Idle, a line is written at once, without waiting for more.
	before := w.writes
	_, _ = l.Write([]byte("alone\n"))
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasSuffix(w.String(), "alone\n") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !strings.HasSuffix(w.String(), "alone\n") || w.writes != before+1 {
		t.Fatalf("a lone line was not written on its own")
	}
}
