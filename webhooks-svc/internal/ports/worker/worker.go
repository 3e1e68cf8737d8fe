// Package worker is webhooks-svc's asynq side: the handler of published events (queue
// "events"), the handler of delivery attempts (queue "webhooks"), and the periodic jobs. Each
// decodes its task and calls the application.
package worker

import (
	"context"
	"fmt"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
	"rentalplatform/webhooks-svc/internal/tasks"
)

// RegisterEvents adds the handler of published events to mux.
func RegisterEvents(mux *asynq.ServeMux, svc *app.Service) {
	mux.HandleFunc(events.TaskType, func(ctx context.Context, t *asynq.Task) error {
		ev, err := events.Unmarshal(t.Payload())
		if err != nil {
			// Retrying cannot make it decodable: archive it for inspection.
			return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
		}
		return svc.Ingest(ctx, ev)
	})
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
