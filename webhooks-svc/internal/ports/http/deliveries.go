package http

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"
	"rentalplatform/libs/validate"

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

// deliveryPage answers a list of the deliveries of one event or to one endpoint: only the
// common list parameters.
func (h handlers) deliveryPage(c *fiber.Ctx, path string, list func(p listing.Params) ([]*domain.Delivery, bool, error)) error {
	q, err := request.Query(c)
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
	return renderDeliveries(c, path, page, hasMore)
}

// renderDeliveries answers a page of deliveries as the list object at path.
func renderDeliveries(c *fiber.Ctx, path string, page []*domain.Delivery, hasMore bool) error {
	data := make([]deliveryJSON, len(page))
	for i, d := range page {
		data[i] = renderDelivery(d)
	}
	return c.JSON(listing.New(path, caller(c).Livemode, data, hasMore))
}

// listDeliveries answers GET /v1/webhook_deliveries: every delivery of the caller's, filtered.
func (h handlers) listDeliveries(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: domain.DeliveryIDPrefix, Created: true, Filters: []string{"endpoint", "event", "status"}})
	if err != nil {
		return err
	}
	f, err := deliveryFilter(q)
	if err != nil {
		return err
	}
	page, hasMore, err := h.svc.ListDeliveries(c.UserContext(), caller(c), f, p)
	if err != nil {
		return err
	}
	return renderDeliveries(c, deliveriesPath, page, hasMore)
}

// deliveryFilter reads endpoint, event and status (listing.Parse has refused them empty or
// repeated). The ids must be well formed, as the retrieve operations' are, but are not looked
// up (app.ListDeliveries).
func deliveryFilter(q url.Values) (domain.DeliveryFilter, error) {
	var f domain.DeliveryFilter
	for _, by := range []struct {
		param, prefix, what string
		dst                 *string
	}{
		{"endpoint", ids.WebhookEndpoint, "a webhook endpoint id", &f.Endpoint},
		{"event", ids.Event, "an event id", &f.Event},
	} {
		v, ok := q[by.param]
		if !ok {
			continue
		}
		if !ids.Valid(by.prefix, v[0]) {
			return f, apierr.Invalid(apierr.CodeParameterInvalid, by.param,
				fmt.Sprintf("Invalid %s: expected %s (%s…), got '%s'.", by.param, by.what, by.prefix, validate.Shown(v[0])))
		}
		*by.dst = v[0]
	}
	if v, ok := q["status"]; ok {
		if !slices.Contains(domain.DeliveryStatuses, domain.DeliveryStatus(v[0])) {
			return f, apierr.Invalid(apierr.CodeParameterInvalid, "status",
				fmt.Sprintf("Invalid status: must be one of pending, succeeded, failed; got '%s'.", validate.Shown(v[0])))
		}
		f.Status = domain.DeliveryStatus(v[0])
	}
	return f, nil
}

func (h handlers) eventDeliveries(c *fiber.Ctx) error {
	id := pathID(c)
	return h.deliveryPage(c, eventsPath+"/"+id+"/deliveries", func(p listing.Params) ([]*domain.Delivery, bool, error) {
		return h.svc.ListEventDeliveries(c.UserContext(), caller(c), id, p)
	})
}

func (h handlers) endpointDeliveries(c *fiber.Ctx) error {
	id := pathID(c)
	return h.deliveryPage(c, basePath+"/"+id+"/deliveries", func(p listing.Params) ([]*domain.Delivery, bool, error) {
		return h.svc.ListEndpointDeliveries(c.UserContext(), caller(c), id, p)
	})
}

func (h handlers) retryDelivery(c *fiber.Ctx) error {
	id := pathID(c)
	if err := request.DecodeJSON(c, &struct{}{}); err != nil {
		return err
	}
	d, err := h.svc.RetryDelivery(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return c.JSON(renderDelivery(d))
}
