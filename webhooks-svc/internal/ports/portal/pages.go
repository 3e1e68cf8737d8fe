package portal

import (
	"embed"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/hostedpage"
)

//go:embed pages
var files embed.FS

// Page names (pages/<name>.html).
const (
	pageOverview  = "overview"
	pageEndpoint  = "endpoint"
	pageDelivery  = "delivery"
	pageEvents    = "events"
	pageRotated   = "rotated"
	pageNotFound  = "notfound"
	pageForbidden = "forbidden"
	pageRefused   = "refused"
	pageError     = "error"
)

// loadPages reads the portal's pages (libs/hostedpage).
func loadPages() (*hostedpage.Pages, error) {
	return hostedpage.Load(files, "pages", pageOverview, pageEndpoint, pageDelivery, pageEvents, pageRotated,
		pageNotFound, pageForbidden, pageRefused, pageError)
}

// view is what a page shows. Fields a page does not use stay zero; the "not found" page uses
// none, so it is the same bytes whatever the request.
type view struct {
	// The session's frame: Base ("/portal/<id>") is set on every page of an open session.
	Base       string
	Nav        string // "endpoints" or "events": the current section
	TestMode   bool
	ReadOnly   bool
	Scoped     bool
	ReturnURL  string
	ReturnHost string
	Expires    string
	CSRF       string
	Notice     string // the flash after an action
	Problem    string

	Endpoints  []endpointView
	Endpoint   *endpointView
	Deliveries []deliveryLine
	Delivery   *deliveryView
	Events     []eventLine
	Older      string // the next (older) page's address
	Secret     string // the rotated secret, shown once

	Message   string // the refused page's
	Back      string
	RequestID string // the error page's reference
}

type endpointView struct {
	ID, Href, URL, Status, Events, Description string
}

type deliveryLine struct {
	ID, Href, EventType, Status, Created string
	Attempts                             int
}

type deliveryView struct {
	ID, Href, EventID, EventType, EndpointHref, EndpointURL, Status, NextAttempt, Created string
	Attempts                                                                              []attemptView
}

type attemptView struct {
	Number, Status   int
	At               string
	DurationMS       int64
	ErrorCode, Error string
}

type eventLine struct {
	ID, Type, Created string
	Deliveries        []eventDelivery
}

type eventDelivery struct{ Href, Status string }

// render answers with the page name in the layout: a read-write session's pages may post
// their forms to the portal itself, the others post nowhere.
func render(c *fiber.Ctx, p *hostedpage.Pages, status int, name string, v view) error {
	formAction := ""
	if v.Base != "" && !v.ReadOnly {
		formAction = "'self'"
	}
	return p.Render(c, status, name, v, formAction)
}
