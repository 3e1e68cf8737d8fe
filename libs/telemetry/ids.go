package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Trace and span ids are made here rather than by the SDK alone, so that a server-span
// middleware can decide whether a request is sampled before it asks the SDK for a span (and
// ask it only for the few that are): it draws the trace id, asks the sampler, and hands the
// SDK the same trace id (ContextWithTraceID), which a ratio sampler then judges the same way.

// NewTraceID returns a random, valid trace id.
func NewTraceID() trace.TraceID {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid
}

// NewSpanID returns a random, valid span id.
func NewSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

type presetTraceIDKey struct{}

// ContextWithTraceID returns ctx carrying the trace id that the next root span started with it
// takes, when the tracer provider uses IDGenerator (Setup's does).
func ContextWithTraceID(ctx context.Context, tid trace.TraceID) context.Context {
	return context.WithValue(ctx, presetTraceIDKey{}, tid)
}

// IDGenerator returns the SDK id generator Setup installs: random ids, except that a root
// span takes the trace id ContextWithTraceID put in its context.
func IDGenerator() sdktrace.IDGenerator { return idGenerator{} }

type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if tid, ok := ctx.Value(presetTraceIDKey{}).(trace.TraceID); ok && tid.IsValid() {
		return tid, NewSpanID()
	}
	return NewTraceID(), NewSpanID()
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return NewSpanID() }
