package http

import (
	"fmt"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"
	"rentalplatform/libs/validate"

	"rentalplatform/webhooks-svc/internal/app"
)

const eventTypesPath = "/v1/event_types"

// eventTypeJSON is the event_type object: one type of the catalogue. The id is the type
// itself, so it can be used where a type is asked for (enabled_events, the events list's
// filters) and as a cursor.
type eventTypeJSON struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Family      string  `json:"family"`
	Emitted     bool    `json:"emitted"`
	Schema      *string `json:"schema"` // the contract's schema of data.object; null when not emitted
	Description string  `json:"description"`
}

func renderEventType(e eventtype.Entry) eventTypeJSON {
	out := eventTypeJSON{ID: e.Type, Object: "event_type", Family: eventtype.Family(e.Type), Emitted: e.Emitted, Description: e.Description}
	if e.Schema != "" {
		s := e.Schema
		out.Schema = &s
	}
	return out
}

// listEventTypes answers GET /v1/event_types, the catalogue ordered by type (app.ListEventTypes).
func (h handlers) listEventTypes(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	// The cursors are type names, which listing.Parse cannot check (it knows ids): they are
	// checked against the catalogue first, so a typo is refused by name rather than paging
	// from wherever it would sort.
	for _, name := range []string{"starting_after", "ending_before"} {
		if v := q.Get(name); v != "" && !eventtype.Known(v) {
			return apierr.Invalid(apierr.CodeParameterInvalid, name,
				fmt.Sprintf("Invalid %s: '%s' is not an event type (this list names them).", name, validate.Shown(v)))
		}
	}
	p, err := listing.Parse(q, listing.Spec{Filters: []string{"family", "emitted"}})
	if err != nil {
		return err
	}
	f, err := eventTypeFilter(q)
	if err != nil {
		return err
	}
	page, hasMore := h.svc.ListEventTypes(f, p)
	data := make([]eventTypeJSON, len(page))
	for i, e := range page {
		data[i] = renderEventType(e)
	}
	return c.JSON(listing.New(eventTypesPath, caller(c).Livemode, data, hasMore))
}

// eventTypeFilter reads family and emitted (listing.Parse has refused them empty or repeated).
func eventTypeFilter(q url.Values) (app.EventTypeFilter, error) {
	var f app.EventTypeFilter
	if v, ok := q["family"]; ok {
		if !eventtype.KnownFamily(v[0]) {
			return f, apierr.Invalid(apierr.CodeParameterInvalid, "family",
				fmt.Sprintf("Invalid family: '%s' is not a known event family (the part of a type before the dot, like 'payment_request').", validate.Shown(v[0])))
		}
		f.Family = v[0]
	}
	if v, ok := q["emitted"]; ok {
		switch v[0] {
		case "true", "false":
			b := v[0] == "true"
			f.Emitted = &b
		default:
			return f, apierr.Invalid(apierr.CodeParameterInvalid, "emitted",
				fmt.Sprintf("Invalid emitted: must be true or false, got '%s'.", validate.Shown(v[0])))
		}
	}
	return f, nil
}
