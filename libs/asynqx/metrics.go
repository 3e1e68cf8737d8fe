package asynqx

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"rentalplatform/libs/telemetry"
)

// Instrument names (in Prometheus: messaging_process_duration_seconds_*, asynq_queue_tasks,
// asynq_queue_latency_seconds).
const (
	MetricProcessDuration = "messaging.process.duration"
	MetricQueueTasks      = "asynq.queue.tasks"
	MetricQueueLatency    = "asynq.queue.latency"
)

// Task outcomes, as the metrics label them: what asynq does with the task next.
const (
	OutcomeOK       = "ok"       // done
	OutcomeRetry    = "retry"    // failed; asynq runs it again later
	OutcomeArchived = "archived" // failed for good (SkipRetry, or its retries ran out)
	OutcomeRevoked  = "revoked"  // dropped on purpose (RevokeTask)
)

// MetricsMiddleware records how long each task took, by queue, task type and outcome: the
// workers' rate, errors and duration, as the HTTP servers have theirs.
func MetricsMiddleware(mp metric.MeterProvider) (asynq.MiddlewareFunc, error) {
	hist, err := mp.Meter("rentalplatform/libs/asynqx").Float64Histogram(MetricProcessDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of asynq task handling, by queue, task type and outcome."),
		metric.WithExplicitBucketBoundaries(telemetry.DurationBuckets...))
	if err != nil {
		return nil, err
	}
	sets := telemetry.NewAttrSets(1024, func(k taskKey) attribute.Set {
		return attribute.NewSet(
			attribute.String("messaging.system", "asynq"),
			attribute.String("messaging.destination.name", k.queue),
			attribute.String("asynq.task.type", k.typ),
			attribute.String("outcome", k.outcome),
		)
	})
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			start := time.Now()
			err := next.ProcessTask(ctx, t)
			queue, _ := asynq.GetQueueName(ctx)
			hist.Record(context.Background(), time.Since(start).Seconds(), sets.Options(taskKey{queue, t.Type(), outcome(ctx, err)})...)
			return err
		})
	}, nil
}

// outcome says what asynq does with a task whose handler returned err (asynq's processor
// decides the same way).
func outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, asynq.RevokeTask):
		return OutcomeRevoked
	case errors.Is(err, asynq.SkipRetry):
		return OutcomeArchived
	}
	retried, ok1 := asynq.GetRetryCount(ctx)
	limit, ok2 := asynq.GetMaxRetry(ctx)
	if ok1 && ok2 && retried >= limit {
		return OutcomeArchived
	}
	return OutcomeRetry
}

// taskKey names a task's attribute set: queues and task types are a handful per service.
type taskKey struct{ queue, typ, outcome string }

// queueStates are the states a queue's tasks are counted in, as asynq names them: pending
// (ready, waiting for a worker), active (being handled), scheduled (due later: a delivery or
// payment retry waits here), retry (failed, waiting for asynq's own retry), archived (failed
// for good).
var queueStates = []string{"pending", "active", "scheduled", "retry", "archived"}

// ObserveQueues reports the depth of each of queues, by task state, and its latency (how long
// the oldest pending task has waited), read with inspector whenever the metrics are scraped.
// A queue asynq has not seen yet (no task ever) reports zeros. Every replica of a service
// reports the same numbers: aggregate them across instances with max, not sum.
func ObserveQueues(mp metric.MeterProvider, inspector *asynq.Inspector, queues ...string) (metric.Registration, error) {
	meter := mp.Meter("rentalplatform/libs/asynqx")
	tasks, err := meter.Int64ObservableGauge(MetricQueueTasks, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks in an asynq queue, by state."))
	if err != nil {
		return nil, err
	}
	latency, err := meter.Float64ObservableGauge(MetricQueueLatency, metric.WithUnit("s"),
		metric.WithDescription("How long the oldest pending task of an asynq queue has waited (0: none pending)."))
	if err != nil {
		return nil, err
	}
	type queueAttrs struct {
		latency metric.ObserveOption
		states  []metric.ObserveOption // in queueStates order
	}
	attrs := make(map[string]queueAttrs, len(queues))
	for _, q := range queues {
		qa := queueAttrs{latency: metric.WithAttributeSet(attribute.NewSet(attribute.String("queue", q)))}
		for _, st := range queueStates {
			qa.states = append(qa.states, metric.WithAttributeSet(attribute.NewSet(attribute.String("queue", q), attribute.String("state", st))))
		}
		attrs[q] = qa
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		known, err := inspector.Queues()
		if err != nil {
			return err // Redis is down: the series are left out of this scrape
		}
		var errs []error
		for _, q := range queues {
			qa := attrs[q]
			counts := make([]int64, len(queueStates))
			var wait time.Duration
			if slices.Contains(known, q) {
				info, err := inspector.GetQueueInfo(q)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				counts = []int64{int64(info.Pending), int64(info.Active), int64(info.Scheduled), int64(info.Retry), int64(info.Archived)}
				wait = info.Latency
			}
			for i, n := range counts {
				o.ObserveInt64(tasks, n, qa.states[i])
			}
			o.ObserveFloat64(latency, wait.Seconds(), qa.latency)
		}
		return errors.Join(errs...)
	}, tasks, latency)
}
