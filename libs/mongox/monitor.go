package mongox

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// NewMonitor returns a command monitor that makes one client span per MongoDB command, child of
// the span in the command's context. (The contrib otelmongo module has no mongo-driver v2
// release we can use, so this is the same idea in a few lines.)
//
// A command run outside any trace (the outbox relay's and the sweeps' polls, the readiness
// ping) makes no span: each would be a trace of its own, a few every second per service, and
// bury the traces of requests and tasks.
func NewMonitor(tp trace.TracerProvider) *event.CommandMonitor {
	tracer := tp.Tracer("rentalplatform/libs/mongox")
	var spans sync.Map // request id -> trace.Span
	end := func(id int64, err error) {
		v, ok := spans.LoadAndDelete(id)
		if !ok {
			return
		}
		span := v.(trace.Span)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	return &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			if !trace.SpanContextFromContext(ctx).IsValid() {
				return
			}
			attrs := []attribute.KeyValue{
				attribute.String("db.system", "mongodb"),
				attribute.String("db.name", e.DatabaseName),
				attribute.String("db.operation", e.CommandName),
			}
			// The first element of a command document is the command name with the collection.
			if el, err := e.Command.IndexErr(0); err == nil {
				if coll, ok := el.Value().StringValueOK(); ok {
					attrs = append(attrs, attribute.String("db.mongodb.collection", coll))
				}
			}
			_, span := tracer.Start(ctx, "mongodb."+e.CommandName,
				trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			spans.Store(e.RequestID, span)
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) { end(e.RequestID, nil) },
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			end(e.RequestID, failure(e.Failure))
		},
	}
}

type commandError struct{ msg string }

func (e commandError) Error() string { return e.msg }

func failure(err error) error {
	if err == nil {
		return commandError{"command failed"}
	}
	return err
}
