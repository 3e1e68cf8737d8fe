package http

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"
	"rentalplatform/libs/validate"

	"rentalplatform/webhooks-svc/internal/domain"
)

const eventsPath = "/v1/events"

// maxTypes bounds types[].
const maxTypes = 20

func renderEvent(r *domain.EventRecord) events.Public {
	// An event is shown in the API version it was created in.
	return events.Render(r.Event, r.Event.APIVersion)
}

func (h handlers) getEvent(c *fiber.Ctx) error {
	id := pathID(c)
	rec, err := h.svc.GetEvent(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return c.JSON(renderEvent(rec))
}

func (h handlers) listEvents(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	q = normalizeTypes(q)
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.Event, Created: true, Filters: []string{"type", "types[]", "delivery_success"}})
	if err != nil {
		return err
	}
	f, err := eventFilter(q)
	if err != nil {
		return err
	}
	page, hasMore, err := h.svc.ListEvents(c.UserContext(), caller(c), f, p)
	if err != nil {
		return err
	}
	data := make([]events.Public, len(page))
	for i, r := range page {
		data[i] = renderEvent(r)
	}
	return c.JSON(listing.New(eventsPath, caller(c).Livemode, data, hasMore))
}

var indexedTypes = regexp.MustCompile(`^types\[\d+\]$`)

// normalizeTypes accepts types[0]=a&types[1]=b (how form-encoding clients send arrays) as
// types[]=a&types[]=b, in index order.
func normalizeTypes(q url.Values) url.Values {
	var keys []string
	for k := range q {
		if indexedTypes.MatchString(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return q
	}
	index := func(k string) int {
		var n int
		fmt.Sscanf(k, "types[%d]", &n)
		return n
	}
	slices.SortFunc(keys, func(a, b string) int { return index(a) - index(b) })
	for _, k := range keys {
		q["types[]"] = append(q["types[]"], q[k]...)
		delete(q, k)
	}
	return q
}

// eventFilter reads type, types[] and delivery_success.
func eventFilter(q url.Values) (domain.EventFilter, error) {
	var f domain.EventFilter
	typ := q.Get("type")
	types := slices.DeleteFunc(slices.Clone(q["types[]"]), func(s string) bool { return s == "" })
	if typ != "" && len(types) > 0 {
		return f, apierr.Invalid(apierr.CodeParametersExclusive, "types",
			"type and types cannot be used together; put every type in types.")
	}
	switch {
	case typ != "":
		if family, ok := strings.CutSuffix(typ, ".*"); ok {
			if !eventtype.KnownFamily(family) {
				return f, apierr.Invalid(apierr.CodeParameterInvalid, "type",
					fmt.Sprintf("Invalid type: '%s' is not a known event family.", validate.Shown(typ)))
			}
			f.Family = family
		} else if eventtype.Known(typ) {
			f.Type = typ
		} else {
			return f, apierr.Invalid(apierr.CodeParameterInvalid, "type",
				fmt.Sprintf("Invalid type: '%s' is not a known event type (or family.* wildcard).", validate.Shown(typ)))
		}
	case len(types) > 0:
		if len(types) > maxTypes {
			return f, apierr.Invalid(apierr.CodeParameterInvalid, "types",
				fmt.Sprintf("Invalid types: at most %d types, got %d.", maxTypes, len(types)))
		}
		for i, t := range types {
			if !eventtype.Known(t) {
				return f, apierr.Invalid(apierr.CodeParameterInvalid, fmt.Sprintf("types[%d]", i),
					fmt.Sprintf("Invalid types[%d]: '%s' is not a known event type.", i, validate.Shown(t)))
			}
		}
		f.Types = types
	}
	switch v := q.Get("delivery_success"); v {
	case "":
	case "true", "false":
		b := v == "true"
		f.DeliverySuccess = &b
	default:
		return f, apierr.Invalid(apierr.CodeParameterInvalid, "delivery_success",
			fmt.Sprintf("Invalid delivery_success: must be true or false, got '%s'.", v))
	}
	return f, nil
}
