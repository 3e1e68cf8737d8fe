// Package worker is webhooks-svc's asynq side: the handlers of published events (queue
// "events", one event or a batch per task), the handler of delivery attempts (queue
// "webhooks"), and the periodic jobs. Each decodes its task and calls the application.
package worker

import (
	"context"
	"fmt"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtask"
	"rentalplatform/libs/stack"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
	"rentalplatform/webhooks-svc/internal/tasks"
)

// RegisterEvents adds the handler of published events to mux.
func RegisterEvents(mux *asynq.ServeMux, svc *app.Service) {
	handle := func(ctx context.Context, t *asynq.Task) error {
		evs, err := eventtask.FromTask(t.Type(), t.Payload())
		if err != nil {
			// Retrying cannot make it decodable: archive it for inspection.
			return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
		}
		if len(evs) == 1 {
			return svc.Ingest(ctx, evs[0])
		}
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(eventtask.BatchAttributes(evs)...)
		}
		return ingestAll(ctx, svc, evs)
	}
	mux.HandleFunc(eventtask.TaskType, handle)
	mux.HandleFunc(eventtask.BatchTaskType, handle)
}

// batchConcurrency is how many events of one batch are ingested at once: as many as when they
// came as tasks of their own to a worker of ordinary concurrency, so their writes still share
// the store's group commits and their first deliveries run side by side.
const batchConcurrency = 16

// ingestAll ingests each event of a batch. Should any fail, the task is retried whole: the
// events already stored are found stored again (Ingest is idempotent on the event id) and only
// what is missing is done.
func ingestAll(ctx context.Context, svc *app.Service, evs []events.Event) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(batchConcurrency)
	for _, ev := range evs {
		g.Go(func() error {
			stack.Grow() // a goroutine per event, whose ingest runs deep (package stack)
			if err := svc.Ingest(ctx, ev); err != nil {
				return fmt.Errorf("event %s: %w", ev.ID, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// RegisterDeliveries adds the handler of delivery attempts to mux.
func RegisterDeliveries(mux *asynq.ServeMux, svc *app.Service) {
	mux.HandleFunc(tasks.TypeDeliver, func(ctx context.Context, t *asynq.Task) error {
		p, err := tasks.ParseDeliver(t.Payload(), domain.DeliveryIDPrefix)
		if err != nil {
			return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
		}
		return svc.Deliver(ctx, p.Delivery, p.Attempt)
	})
}
