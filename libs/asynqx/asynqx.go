// Package asynqx is how every service uses asynq: connection options from a Redis URL, a
// producer that enqueues tasks in a producer span whose W3C trace context their headers carry,
// a server middleware that restores it, metrics of the tasks handled and of the queues, and a
// server configuration tuned for latency.
package asynqx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Polling intervals. asynq polls Redis instead of blocking: an idle server sleeps about
// TaskCheckInterval between dequeue attempts (so that is the latency a new task waits), and
// scheduled or retried tasks are moved to their queue every DelayedTaskCheckInterval. The
// defaults (1 s and 5 s) put most of a webhook's latency in these sleeps; at 20 ms an idle
// server runs about 50 dequeue scripts a second, and 100 ms costs 10 forwarder runs a second.
const (
	TaskCheckInterval        = 20 * time.Millisecond
	DelayedTaskCheckInterval = 100 * time.Millisecond
)

// RedisOpt parses a redis:// URL into asynq's connection options.
func RedisOpt(url string) (asynq.RedisConnOpt, error) {
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL %q: %w", url, err)
	}
	return opt, nil
}

// Lineage says how the span of a task's handling relates to the producer span that enqueued it.
type Lineage int

const (
	// Child continues the producer's trace: the consumer span is the producer span's child.
	// For work that is part of what caused it: an event's fan-out and delivery attempts belong
	// to the API request whose change raised the event.
	Child Lineage = iota
	// Linked starts a trace of its own whose consumer span links to the producer span. For
	// work scheduled for later (a payment attempt, a session's expiry): on the request's trace
	// it would stretch that trace over days and hide the request's own duration, while the
	// link still leads from the attempt to the request that scheduled it.
	Linked
)

// TraceMiddleware restores the trace context a task was enqueued with (Producer) and wraps
// the task's handling in a consumer span, child of or linked to the producer span (lineage).
func TraceMiddleware(tp trace.TracerProvider, prop propagation.TextMapPropagator, lineage Lineage) asynq.MiddlewareFunc {
	tracer := tp.Tracer("rentalplatform/libs/asynqx")
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			attrs := []attribute.KeyValue{
				attribute.String("messaging.system", "asynq"),
				attribute.String("messaging.operation.type", "process"),
				attribute.String("asynq.task.type", t.Type()),
			}
			if id, ok := asynq.GetTaskID(ctx); ok {
				attrs = append(attrs, attribute.String("messaging.message.id", id))
			}
			if q, ok := asynq.GetQueueName(ctx); ok {
				attrs = append(attrs, attribute.String("messaging.destination.name", q))
			}
			if n, ok := asynq.GetRetryCount(ctx); ok && n > 0 {
				attrs = append(attrs, attribute.Int("asynq.task.retry_count", n))
			}
			opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
			producer := prop.Extract(ctx, propagation.MapCarrier(t.Headers()))
			switch sc := trace.SpanContextFromContext(producer); {
			case lineage == Child:
				ctx = producer
			case sc.IsValid():
				// The baggage still travels; only the span parentage is cut.
				ctx = producer
				opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			ctx, span := tracer.Start(ctx, "process "+t.Type(), opts...)
			defer span.End()
			err := next.ProcessTask(ctx, t)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		})
	}
}

// ServerConfig returns an asynq server configuration with the platform's polling intervals,
// the given queues (name → priority) and concurrency, logging through log.
func ServerConfig(queues map[string]int, concurrency int, log *slog.Logger) asynq.Config {
	return asynq.Config{
		Concurrency:              concurrency,
		Queues:                   queues,
		TaskCheckInterval:        TaskCheckInterval,
		DelayedTaskCheckInterval: DelayedTaskCheckInterval,
		Logger:                   logger{log.With("component", "asynq")},
		LogLevel:                 asynq.WarnLevel,
		ShutdownTimeout:          10 * time.Second,
		RetryDelayFunc:           RetryDelay,
	}
}

// RetryDelay is asynq's default back-off, except for a task whose worker died holding it (lease
// expired): that task was not refused, its worker is gone, so it runs again at once. asynq only
// notices such a task a minute or so after the crash (30 s lease, 30 s grace, checked every
// minute); its default back-off on top of that (15 s to 45 s) made recovery after a kill -9
// take about 105 s.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	if errors.Is(err, asynq.ErrLeaseExpired) {
		return 0
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}

// logger adapts slog to asynq's printf-style Logger.
type logger struct{ l *slog.Logger }

func (a logger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a logger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a logger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a logger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }

// Fatal is called by asynq only for unrecoverable start-up problems; it logs them as errors and
// leaves stopping the process to the caller, which sees the error from Start or Run.
func (a logger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...), "fatal", true) }

// NotBefore rounds a due time up to the next whole second. asynq keeps scheduled times in whole
// seconds (truncated), so a task due at 12.9 s would otherwise run at 12.0 s: before its time.
func NotBefore(at time.Time) time.Time {
	t := at.Truncate(time.Second)
	if t.Equal(at) {
		return at
	}
	return t.Add(time.Second)
}
