package logging

import (
	"io"
	"sync"
	"time"
)

// maxPendingLog bounds the log bytes waiting to be written; past it a Write waits for them.
const maxPendingLog = 4 << 20

// gatherLogs is how long a batch gathers lines before it is written.
const gatherLogs = time.Millisecond

// LogWriter writes log lines in batches: a line is added to a buffer, and one goroutine,
// started when the buffer stops being empty and ending when it is empty again, writes what
// has piled up within a millisecond with one system call. Under load the access log line of every request costs a
// share of a write instead of a whole one: on a loaded 2-CPU machine a write to a pipe, and
// waking its reader, cost the gateway more than formatting the line (about a quarter of its
// CPU per request; docs/architecture.md, "Where the gateway's time goes"). Lines keep their
// order. A line is written a moment after Write returns, so a process flushes before it
// exits (Flush); what a crash interrupts may lose the lines of that moment.
type LogWriter struct {
	w io.Writer

	mu       sync.Mutex
	idle     *sync.Cond // signalled when the buffer drains
	buf      []byte
	spare    []byte
	flushing bool
}

// NewLogWriter returns a LogWriter writing to w.
func NewLogWriter(w io.Writer) *LogWriter {
	l := &LogWriter{w: w}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// Write adds p to the batch being gathered.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	for len(l.buf) > maxPendingLog {
		l.idle.Wait()
	}
	l.buf = append(l.buf, p...)
	if !l.flushing {
		l.flushing = true
		go l.flush()
	}
	l.mu.Unlock()
	return len(p), nil
}

func (l *LogWriter) flush() {
	// A moment for the lines of other requests under way to join the batch: without it, a
	// busy gateway's batches held one or two lines, and each cost a goroutine and a write.
	time.Sleep(gatherLogs)
	l.mu.Lock()
	for len(l.buf) > 0 {
		b := l.buf
		l.buf = l.spare[:0]
		l.mu.Unlock()
		_, _ = l.w.Write(b) // as slog's handlers: a log that cannot be written is dropped
		l.mu.Lock()
		l.spare = b[:0]
		l.idle.Broadcast()
	}
	l.flushing = false
	l.idle.Broadcast()
	l.mu.Unlock()
}

// Flush waits until every line written so far is out.
func (l *LogWriter) Flush() {
	l.mu.Lock()
	for l.flushing || len(l.buf) > 0 {
		l.idle.Wait()
	}
	l.mu.Unlock()
}
