package config

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

// Lines written at once by many goroutines all arrive, whole, each once, in fewer writes than
// lines; every Write returns only once its line is out.
func TestGroupWriter(t *testing.T) {
	w := &slowWriter{}
	g := newGroupWriter(w)
	const n = 400
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := fmt.Sprintf("line %03d\n", i)
			if _, err := g.Write([]byte(line)); err != nil {
				t.Error(err)
			}
			w.mu.Lock()
			out := w.buf.String()
			w.mu.Unlock()
			if !strings.Contains(out, line) {
				t.Errorf("Write of %q returned before it was written", line)
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	sort.Strings(lines)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		if l != fmt.Sprintf("line %03d", i) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
	if w.writes >= n {
		t.Errorf("%d writes for %d lines written at once; want them grouped", w.writes, n)
	}
}
