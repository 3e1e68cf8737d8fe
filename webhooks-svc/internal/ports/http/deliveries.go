package http

import (
	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

const deliveriesPath = "/v1/webhook_deliveries"

// deliveryJSON is the webhook_delivery object.
type deliveryJSON struct {
	ID              string                `json:"id"`
	Object          string                `json:"object"`
	Event           string                `json:"event"`
	WebhookEndpoint *string               `json:"webhook_endpoint"` // null: to the event's own destination
	Status          domain.DeliveryStatus `json:"status"`
	Attempts        []attemptJSON         `json:"attempts"`
	NextAttemptAt   *int64                `json:"next_attempt_at"`
	Created         int64                 `json:"created"`
	Livemode        bool                  `json:"livemode"`
}

// attemptJSON is one attempt, oldest first: when it was made, how long it took, the HTTP
// status received, and, when it failed, the stable category and the message written for the
// customer (never the sender's own error, which may name internal addresses).
type attemptJSON struct {
	AttemptedAt    int64                    `json:"attempted_at"`
	DurationMS     int64                    `json:"duration_ms"`
	ResponseStatus *int                     `json:"response_status"`
	ErrorCode      *domain.AttemptErrorCode `json:"error_code"`
	Error          *string                  `json:"error"`
}

func renderDelivery(d *domain.Delivery) deliveryJSON {
	out := deliveryJSON{
		ID: d.ID(), Object: "webhook_delivery", Event: d.Event(),
		Status: d.Status(), Attempts: []attemptJSON{}, Created: d.Created().Unix(), Livemode: d.Livemode(),
	}
	if !d.ToDestination() {
		ep := d.Endpoint()
		out.WebhookEndpoint = &ep
	}
	for _, a := range d.Attempts() {
		j := attemptJSON{AttemptedAt: a.At.Unix(), DurationMS: a.Duration.Milliseconds()}
		if a.Status != 0 {
			j.ResponseStatus = &a.Status
		}
		if a.ErrorCode != "" {
			msg := a.Message()
			j.ErrorCode, j.Error = &a.ErrorCode, &msg
		}
		out.Attempts = append(out.Attempts, j)
	}
	if next := d.NextAttemptAt(); !next.IsZero() {
		// Rounded up: the attempt is not made before the second shown.
		n := next.Unix()
		if next.Nanosecond() > 0 {
			n++
		}
		out.NextAttemptAt = &n
	}
	return out
}

func (h handlers) deliveryPage(c *fiber.Ctx, url string, list func(p listing.Params) ([]*domain.Delivery, bool, error), id string) error {
	q, err := fiberx.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: domain.DeliveryIDPrefix})
	if err != nil {
		return err
	}
	page, hasMore, err := list(p)
	if err != nil {
		return err
	}
	data := make([]deliveryJSON, len(page))
	for i, d := range page {
		data[i] = renderDelivery(d)
	}
	return c.JSON(listing.New(url, data, hasMore))
}

func (h handlers) eventDeliveries(c *fiber.Ctx) error {
	id := pathID(c)
	return h.deliveryPage(c, eventsPath+"/"+id+"/deliveries", func(p listing.Params) ([]*domain.Delivery, bool, error) {
		return h.svc.ListEventDeliveries(c.UserContext(), caller(c), id, p)
	}, id)
}

func (h handlers) endpointDeliveries(c *fiber.Ctx) error {
	id := pathID(c)
	return h.deliveryPage(c, basePath+"/"+id+"/deliveries", func(p listing.Params) ([]*domain.Delivery, bool, error) {
		return h.svc.ListEndpointDeliveries(c.UserContext(), caller(c), id, p)
	}, id)
}

func (h handlers) retryDelivery(c *fiber.Ctx) error {
	id := pathID(c)
	if err := fiberx.DecodeJSON(c, &struct{}{}); err != nil {
		return err
	}
	d, err := h.svc.RetryDelivery(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return c.JSON(renderDelivery(d))
}
