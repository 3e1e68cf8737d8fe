// Package logging is how every process logs: JSON lines on stdout (Logger), written in batches
// (LogWriter), each line logged inside a span carrying its trace and span ids (TraceHandler).
package logging

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"unsafe"

	"go.opentelemetry.io/otel/trace"
)

// TraceHandler wraps h so that every record logged with a context holding a span carries that
// span's trace_id and span_id: a log line found by its request id leads to its trace, and a
// slow span in a trace leads to the lines written while it ran. Records logged without a
// context (or outside any span) are passed on unchanged.
func TraceHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		// Both ids in one allocation: this runs for every access log line.
		tid, sid := sc.TraceID(), sc.SpanID()
		buf := make([]byte, 2*len(tid)+2*len(sid))
		hex.Encode(buf, tid[:])
		hex.Encode(buf[2*len(tid):], sid[:])
		ids := unsafe.String(&buf[0], len(buf)) // buf is never written again
		r.AddAttrs(slog.String("trace_id", ids[:2*len(tid)]), slog.String("span_id", ids[2*len(tid):]))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

// Logger returns the JSON logger every process writes to stdout. A line logged with a context
// inside a span carries its trace_id and span_id (TraceHandler). A process passes its stdout
// through a LogWriter, so lines are written in batches, and flushes it before it exits.
func Logger(w io.Writer, service string, level slog.Level) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(TraceHandler(h)).With("service", service)
}
