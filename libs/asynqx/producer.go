package asynqx

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Enqueuer is the part of *asynq.Client a Producer uses.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Producer is how every task is enqueued: inside a producer span, child of the caller's span,
// whose context the task's headers carry, so the consumer's span (TraceMiddleware) hangs under
// the publish in the trace and the time a task waited in the queue shows between the two.
type Producer struct {
	client Enqueuer
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// NewProducer returns a producer enqueuing through client; a nil tp makes no spans (the
// headers still carry the caller's trace context).
func NewProducer(client Enqueuer, tp trace.TracerProvider, prop propagation.TextMapPropagator) *Producer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return &Producer{client: client, tracer: tp.Tracer("rentalplatform/libs/asynqx"), prop: prop}
}

// Propagator is the propagator the task headers are written with.
func (p *Producer) Propagator() propagation.TextMapPropagator { return p.prop }

// Enqueue enqueues a task of type typ. asynq.ErrTaskIDConflict (the task is queued already)
// is returned as it is, for the caller to take as done, and is not a failed publish.
func (p *Producer) Enqueue(ctx context.Context, typ string, payload []byte, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	return p.EnqueueWith(ctx, typ, payload, nil, opts...)
}

// EnqueueWith is Enqueue with attributes of the caller's on the producer span (what the task
// carries, where its id alone does not say it).
func (p *Producer) EnqueueWith(ctx context.Context, typ string, payload []byte, extra []attribute.KeyValue, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	queue := "default"
	attrs := append([]attribute.KeyValue{
		attribute.String("messaging.system", "asynq"),
		attribute.String("messaging.operation.type", "send"),
		attribute.String("asynq.task.type", typ),
	}, extra...)
	for _, o := range opts {
		switch o.Type() {
		case asynq.QueueOpt:
			queue, _ = o.Value().(string)
		case asynq.TaskIDOpt:
			if id, ok := o.Value().(string); ok {
				attrs = append(attrs, attribute.String("messaging.message.id", id))
			}
		}
	}
	attrs = append(attrs, attribute.String("messaging.destination.name", queue))
	ctx, span := p.tracer.Start(ctx, "send "+typ, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()
	headers := map[string]string{}
	p.prop.Inject(ctx, propagation.MapCarrier(headers))
	info, err := p.client.EnqueueContext(ctx, asynq.NewTaskWithHeaders(typ, payload, headers), opts...)
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict):
		span.SetAttributes(attribute.Bool("asynq.task.duplicate", true))
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, "enqueue failed")
	}
	return info, err
}
