package asynqx

import (
	"context"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// queue is an Enqueuer that keeps the tasks it is given, and answers with err.
type queue struct {
	tasks []*asynq.Task
	err   error
}

func (q *queue) EnqueueContext(_ context.Context, task *asynq.Task, _ ...asynq.Option) (*asynq.TaskInfo, error) {
	q.tasks = append(q.tasks, task)
	return &asynq.TaskInfo{}, q.err
}

func recorder() (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	return rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
}

func ended(rec *tracetest.SpanRecorder, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanKind() == kind {
			out = append(out, s)
		}
	}
	return out
}

// A task is enqueued in a producer span of the caller's trace, and handled in a consumer span
// that is the producer span's child (Child) or the root of a new trace linked to it (Linked).
func TestTraceAcrossTheQueue(t *testing.T) {
	prop := propagation.TraceContext{}
	for _, lineage := range []Lineage{Child, Linked} {
		rec, tp := recorder()
		q := &queue{}
		p := NewProducer(q, tp, prop)
		ctx, request := tp.Tracer("test").Start(context.Background(), "request")
		if _, err := p.Enqueue(ctx, "thing:do", []byte("{}"), asynq.Queue("things"), asynq.TaskID("thing_1")); err != nil {
			t.Fatal(err)
		}
		request.End()
		producers := ended(rec, trace.SpanKindProducer)
		if len(producers) != 1 {
			t.Fatalf("%d producer spans", len(producers))
		}
		pub := producers[0]
		attrs := map[string]string{}
		for _, a := range pub.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
		}
		if pub.Parent().SpanID() != request.SpanContext().SpanID() || attrs["messaging.destination.name"] != "things" ||
			attrs["messaging.message.id"] != "thing_1" || attrs["asynq.task.type"] != "thing:do" || pub.Name() != "send thing:do" {
			t.Fatalf("producer span %q parent %v attrs %v", pub.Name(), pub.Parent().SpanID(), attrs)
		}

		var handled trace.SpanContext
		h := TraceMiddleware(tp, prop, lineage)(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
			handled = trace.SpanContextFromContext(ctx)
			return nil
		}))
		if err := h.ProcessTask(context.Background(), q.tasks[0]); err != nil {
			t.Fatal(err)
		}
		consumers := ended(rec, trace.SpanKindConsumer)
		if len(consumers) != 1 || consumers[0].SpanContext().SpanID() != handled.SpanID() {
			t.Fatalf("%d consumer spans, or the handler did not run in it", len(consumers))
		}
		c := consumers[0]
		switch lineage {
		case Child:
			if c.Parent().SpanID() != pub.SpanContext().SpanID() || c.SpanContext().TraceID() != pub.SpanContext().TraceID() || len(c.Links()) != 0 {
				t.Errorf("Child: consumer parent %v, trace %v, links %v", c.Parent().SpanID(), c.SpanContext().TraceID(), c.Links())
			}
		case Linked:
			if c.Parent().IsValid() || c.SpanContext().TraceID() == pub.SpanContext().TraceID() ||
				len(c.Links()) != 1 || c.Links()[0].SpanContext.SpanID() != pub.SpanContext().SpanID() {
				t.Errorf("Linked: consumer parent %v, trace %v (producer's %v), links %v",
					c.Parent(), c.SpanContext().TraceID(), pub.SpanContext().TraceID(), c.Links())
			}
		}
	}
}

// A task queued already is not a failed publish; any other error is.
func TestProducerErrors(t *testing.T) {
	rec, tp := recorder()
	p := NewProducer(&queue{err: asynq.ErrTaskIDConflict}, tp, propagation.TraceContext{})
	if _, err := p.Enqueue(context.Background(), "t", nil, asynq.TaskID("x")); !errors.Is(err, asynq.ErrTaskIDConflict) {
		t.Fatalf("conflict: %v", err)
	}
	p = NewProducer(&queue{err: errors.New("redis down")}, tp, propagation.TraceContext{})
	if _, err := p.Enqueue(context.Background(), "t", nil); err == nil {
		t.Fatal("an enqueue error was swallowed")
	}
	spans := ended(rec, trace.SpanKindProducer)
	if len(spans) != 2 || spans[0].Status().Code.String() == "Error" || spans[1].Status().Code.String() != "Error" {
		t.Fatalf("statuses %v, %v; want the conflict unset and the failure an error", spans[0].Status(), spans[1].Status())
	}
	dup := false
	for _, a := range spans[0].Attributes() {
		dup = dup || (a.Key == "asynq.task.duplicate" && a.Value.AsBool())
	}
	if !dup {
		t.Error("the conflict's span does not say the task was queued already")
	}
}
