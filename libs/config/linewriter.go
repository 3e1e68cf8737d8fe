package config

import (
	"io"
	"sync"
)

// groupWriter writes log lines that arrive while another write is in progress in one write
// with the next ones (group commit), instead of one write system call each: under load the
// access log of every request costs a fraction of a system call, not a whole one (on a
// loaded 2-CPU machine, a pipe write and the wake-up of its reader cost the gateway more than
// formatting the line). Every Write still returns only once its bytes were written, in the
// order the Writes arrived, so nothing is held back and nothing is lost when a process exits.
type groupWriter struct {
	w io.Writer

	mu      sync.Mutex
	done    *sync.Cond
	pending []byte // arrived while a write was in progress
	spare   []byte
	writing bool
	// Batches of pending bytes taken for writing, and written: a Write that joined waits
	// until the batch holding its bytes (the next one taken) is written.
	taken, written uint64
	err            error // of the last batch
}

func newGroupWriter(w io.Writer) *groupWriter {
	g := &groupWriter{w: w}
	g.done = sync.NewCond(&g.mu)
	return g
}

func (g *groupWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.writing {
		// The writer in progress takes these bytes in its next batch.
		g.pending = append(g.pending, p...)
		mine := g.taken + 1
		for g.written < mine {
			g.done.Wait()
		}
		if g.err != nil {
			return 0, g.err
		}
		return len(p), nil
	}
	g.writing = true
	g.mu.Unlock()
	_, err := g.w.Write(p)
	g.mu.Lock()
	for len(g.pending) > 0 {
		b := g.pending
		g.pending = g.spare[:0]
		g.taken++
		g.mu.Unlock()
		_, berr := g.w.Write(b)
		g.mu.Lock()
		g.spare = b[:0]
		g.err = berr
		g.written++
		g.done.Broadcast()
	}
	g.writing = false
	if err != nil {
		return 0, err
	}
	return len(p), nil
}
