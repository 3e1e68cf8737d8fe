package mongostore

import (
	"context"
	"log/slog"
	"slices"
)

// lazyHandler defers WithAttrs and WithGroup until a record is actually handled.
//
// FerretDB's SQL layer calls logger.With(args, rows, time, error) around every statement and
// then logs at DEBUG, which is almost never enabled. slog's built-in handlers format the attrs
// in With, so every statement paid for text it threw away (a visible share of a replace's CPU
// in BenchmarkOps' profile; docs/architecture.md). This wrapper only remembers them.
type lazyHandler struct {
	h   slog.Handler
	ops []func(slog.Handler) slog.Handler // With* calls not yet applied, in order
}

func newLazyHandler(h slog.Handler) slog.Handler { return &lazyHandler{h: h} }

// Enabled asks the wrapped handler: the built-in handlers decide on the level alone.
func (l *lazyHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *lazyHandler) Handle(ctx context.Context, r slog.Record) error {
	h := l.h
	for _, op := range l.ops {
		h = op(h)
	}
	return h.Handle(ctx, r)
}

func (l *lazyHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return l
	}
	attrs = slices.Clone(attrs)
	return l.with(func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) })
}

func (l *lazyHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	return l.with(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}

func (l *lazyHandler) with(op func(slog.Handler) slog.Handler) *lazyHandler {
	// A fresh slice each time: two loggers derived from one must not share a backing array.
	ops := make([]func(slog.Handler) slog.Handler, len(l.ops), len(l.ops)+1)
	copy(ops, l.ops)
	return &lazyHandler{h: l.h, ops: append(ops, op)}
}
