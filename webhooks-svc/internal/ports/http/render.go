package http

import (
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/webhooks-svc/internal/domain"
)

// endpointJSON is the webhook_endpoint object. The secret is set only in the create response.
type endpointJSON struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	URL           string            `json:"url"`
	EnabledEvents []string          `json:"enabled_events"`
	Status        domain.Status     `json:"status"`
	Secret        string            `json:"secret,omitempty"`
	APIVersion    string            `json:"api_version"`
	Description   *string           `json:"description"`
	Metadata      map[string]string `json:"metadata"`
	Created       int64             `json:"created"`
	Livemode      bool              `json:"livemode"`
}

type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// EndpointObject renders an endpoint as the API shows it after creation (without its secret):
// the object of the webhook_endpoint.* events (run.go's events.Emitter), and the answer of an
// update.
func EndpointObject(e *domain.Endpoint) any { return render(e, false) }

// EndpointEvents renders the events endpoints raise, their object as this port answers it
// (without the secret).
func EndpointEvents(gen *ids.Generator, now func() time.Time) *events.Emitter[*domain.Endpoint] {
	return &events.Emitter[*domain.Endpoint]{IDs: gen, Now: now, Object: EndpointObject}
}

func render(e *domain.Endpoint, withSecret bool) endpointJSON {
	out := endpointJSON{
		ID:            e.ID(),
		Object:        domain.ObjectEndpoint,
		URL:           e.URL(),
		EnabledEvents: e.EnabledEvents(),
		Status:        e.Status(),
		APIVersion:    e.APIVersion(),
		Metadata:      e.Metadata(),
		Created:       e.Created().Unix(),
		Livemode:      e.Livemode(),
	}
	if withSecret {
		out.Secret = e.Secret()
	}
	// An unset description is null, as in Stripe's objects.
	if d := e.Description(); d != "" {
		out.Description = &d
	}
	return out
}
