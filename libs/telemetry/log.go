package telemetry

import (
	"context"
	"encoding/hex"
	"log/slog"
	"unsafe"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps h so that every record logged with a context holding a span carries that
// span's trace_id and span_id: a log line found by its request id leads to its trace, and a
// slow span in a trace leads to the lines written while it ran. Records logged without a
// context (or outside any span) are passed on unchanged.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

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
