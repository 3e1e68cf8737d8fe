// Package http is webhooks-svc's public API — webhook endpoints, events and deliveries: Fiber
// handlers that decode the request, call the application and encode the answer. The business
// rules live in domain and app.
package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
)

const basePath = "/v1/webhook_endpoints"

type handlers struct {
	svc    *app.Service
	stream StreamConfig
}

// Register adds the routes to r.
func Register(r fiber.Router, svc *app.Service, stream StreamConfig) {
	h := handlers{svc: svc, stream: stream}
	// Lists read their query parameters (refusing the ones they do not take); every other
	// operation takes none, and a request that sends one is refused by name.
	r.Post(basePath, request.NoQuery(h.create))
	r.Get(basePath, h.list)
	r.Get(basePath+"/:id", request.NoQuery(h.get))
	r.Post(basePath+"/:id", request.NoQuery(h.update))
	r.Delete(basePath+"/:id", request.NoQuery(h.delete))
	r.Post(basePath+"/:id/rotate_secret", request.NoQuery(h.rotateSecret))
	r.Get(basePath+"/:id/deliveries", h.endpointDeliveries)
	r.Get(eventsPath, h.listEvents)
	r.Get(streamPath, request.NoQuery(h.streamEvents)) // before :id, which it would match
	r.Get(eventsPath+"/:id", request.NoQuery(h.getEvent))
	r.Get(eventsPath+"/:id/deliveries", h.eventDeliveries)
	r.Get(deliveriesPath, h.listDeliveries)
	r.Post(deliveriesPath+"/:id/retry", request.NoQuery(h.retryDelivery))
	r.Get(eventTypesPath, h.listEventTypes)
}

// createParams is the body of POST /v1/webhook_endpoints. Pointers tell "absent" from "empty".
type createParams struct {
	URL           *string           `json:"url"`
	EnabledEvents []string          `json:"enabled_events"`
	Description   *string           `json:"description"`
	APIVersion    *string           `json:"api_version"`
	Metadata      map[string]string `json:"metadata"`
}

// updateParams is the body of POST /v1/webhook_endpoints/:id.
type updateParams struct {
	URL           *string           `json:"url"`
	EnabledEvents []string          `json:"enabled_events"`
	Status        *string           `json:"status"`
	Description   *string           `json:"description"`
	Metadata      map[string]string `json:"metadata"`
}

func caller(c *fiber.Ctx) app.Caller { return fiberx.Identity(c) }

// pathID copies the :id parameter out of Fiber's reused request buffer.
func pathID(c *fiber.Ctx) string { return strings.Clone(c.Params("id")) }

func (h handlers) create(c *fiber.Ctx) error {
	var p createParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	in := app.CreateEndpoint{
		EnabledEvents: p.EnabledEvents,
		Description:   p.Description,
		APIVersion:    p.APIVersion,
		Metadata:      p.Metadata,
	}
	if p.URL != nil {
		in.URL = *p.URL
	}
	e, err := h.svc.Create(c.UserContext(), caller(c), in)
	if err != nil {
		return err
	}
	// Not the webhook_endpoint.created event's object (fiberx.Object): the answer alone shows
	// the secret.
	return c.JSON(render(e, true))
}

// rotateParams is the body of POST /v1/webhook_endpoints/:id/rotate_secret.
type rotateParams struct {
	ExpiresIn *int64 `json:"expires_in"`
}

func (h handlers) rotateSecret(c *fiber.Ctx) error {
	id := pathID(c)
	var p rotateParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	e, err := h.svc.RotateSecret(c.UserContext(), caller(c), id, p.ExpiresIn)
	if err != nil {
		return err
	}
	return c.JSON(render(e, true))
}

func (h handlers) get(c *fiber.Ctx) error {
	id := pathID(c)
	e, err := h.svc.Get(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return c.JSON(render(e, false))
}

func (h handlers) update(c *fiber.Ctx) error {
	id := pathID(c)
	var p updateParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	e, err := h.svc.Update(c.UserContext(), caller(c), id, domain.Changes{
		URL:           p.URL,
		EnabledEvents: p.EnabledEvents,
		Status:        p.Status,
		Description:   p.Description,
		Metadata:      p.Metadata,
	})
	if err != nil {
		return err
	}
	// The webhook_endpoint.updated event's object, when the change raised one.
	return fiberx.Object(c, e, EndpointObject)
}

func (h handlers) delete(c *fiber.Ctx) error {
	id := pathID(c)
	if err := h.svc.Delete(c.UserContext(), caller(c), id); err != nil {
		return err
	}
	return c.JSON(deleted{ID: id, Object: domain.ObjectEndpoint, Deleted: true})
}

func (h handlers) list(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.WebhookEndpoint})
	if err != nil {
		return err
	}
	page, hasMore, err := h.svc.List(c.UserContext(), caller(c), p)
	if err != nil {
		return err
	}
	data := make([]endpointJSON, len(page))
	for i, e := range page {
		data[i] = render(e, false)
	}
	return c.JSON(listing.New(basePath, caller(c).Livemode, data, hasMore))
}
