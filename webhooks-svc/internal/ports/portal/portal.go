// Package portal is webhooks-svc's webhook portal: the pages an account's own customer opens in
// a browser at /portal/<session id>, through the gateway without an API key (the gateway signs
// the requests with the hosted-page identity, identity.HostedAccount). A portal session
// (POST /v1/webhook_portal_sessions) is the pages' only credential: its link carries the token
// once (?token=…), which this package moves into a cookie (HttpOnly, SameSite=Lax, the
// session's path) before redirecting to the address without it. Every page reads the cookie and
// checks the session, its expiry included; every action (a form POST) also needs the page's
// CSRF value. Anything the session does not open, or does not show, is one and the same 404
// page. Pages are html/template from embedded files, with no external asset and a strict
// Content-Security-Policy (pages.go); docs/hosted-pages.md describes them.
package portal

import (
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/hostedpage"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
	httpport "rentalplatform/webhooks-svc/internal/ports/http"
)

// Prefix is the portal's path prefix, which the service declares to its HTTP server
// (service.WithHostedPages) and the gateway routes to it without an API key.
const Prefix = httpport.PortalPrefix

// The page's parameters.
const (
	// queryToken carries the token in the link, once.
	queryToken = "token"
	// cookieToken holds it afterwards.
	cookieToken = "portal_token"
	// fieldCSRF is every action form's CSRF value.
	fieldCSRF = "csrf"
	// queryAfter is a page's cursor: the older items after this id.
	queryAfter = "after"
	// queryNotice names the flash shown after an action.
	queryNotice = "notice"
)

// notices are the flash messages, by queryNotice value.
var notices = map[string]string{
	"retried":  "The delivery was sent again. Its new attempt shows here within moments: reload the page.",
	"disabled": "The endpoint is disabled: it receives nothing until it is enabled again.",
	"enabled":  "The endpoint is enabled: its pending deliveries are being sent.",
}

// Config configures the portal's pages.
type Config struct {
	// SecureCookie marks the cookie Secure even when the request did not come over https
	// (the portal's base URL is https: TLS ends before the gateway).
	SecureCookie bool
	Log          *slog.Logger
}

type handlers struct {
	svc    *app.Service
	log    *slog.Logger
	pages  *hostedpage.Pages
	secure bool
}

// Register adds the portal's routes to r.
func Register(r fiber.Router, svc *app.Service, cfg Config) error {
	p, err := loadPages()
	if err != nil {
		return err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	h := handlers{svc: svc, log: cfg.Log, pages: p, secure: cfg.SecureCookie}
	r.Get(Prefix+":id", h.overview)
	r.Get(Prefix+":id/events", h.events)
	r.Get(Prefix+":id/endpoints/:endpoint", h.endpoint)
	r.Post(Prefix+":id/endpoints/:endpoint/rotate_secret", h.rotateSecret)
	r.Post(Prefix+":id/endpoints/:endpoint/disable", h.setEnabled(false))
	r.Post(Prefix+":id/endpoints/:endpoint/enable", h.setEnabled(true))
	r.Get(Prefix+":id/deliveries/:delivery", h.delivery)
	r.Post(Prefix+":id/deliveries/:delivery/retry", h.retry)
	return nil
}

// opened is a request's open session, with its token (from the cookie).
type opened struct {
	ps    *domain.PortalSession
	token string
}

func param(c *fiber.Ctx, name string) string { return strings.Clone(c.Params(name)) }

// open returns the session the request's cookie opens, or app.ErrPortalNotFound.
func (h handlers) open(c *fiber.Ctx) (opened, error) {
	token := strings.Clone(c.Cookies(cookieToken))
	ps, err := h.svc.OpenPortal(c.UserContext(), param(c, "id"), token)
	return opened{ps, token}, err
}

// frame is the view of every page of an open session.
func (h handlers) frame(o opened, nav string) view {
	ps := o.ps
	v := view{
		Base: Prefix + ps.ID(), Nav: nav, TestMode: !ps.Livemode(), ReadOnly: !ps.Writable(),
		Scoped: ps.Endpoint() != "", Expires: when(ps.ExpiresAt()), CSRF: ps.CSRF(o.token),
	}
	if u := ps.ReturnURL(); u != "" {
		v.ReturnURL = u
		if pu, err := url.Parse(u); err == nil {
			v.ReturnHost = pu.Hostname()
		}
	}
	return v
}

// overview answers GET /portal/:id: with ?token=… (the link), the token is checked, kept in
// the cookie, and the browser sent to the address without it (303); otherwise the session's
// endpoints.
func (h handlers) overview(c *fiber.Ctx) error {
	if c.Request().URI().QueryArgs().Has(queryToken) {
		return h.enter(c)
	}
	o, err := h.open(c)
	if err != nil {
		return h.fail(c, err)
	}
	eps, err := h.svc.PortalEndpoints(c.UserContext(), o.ps)
	if err != nil {
		return h.fail(c, err)
	}
	v := h.frame(o, "endpoints")
	for _, e := range eps {
		v.Endpoints = append(v.Endpoints, endpointOf(v.Base, e))
	}
	return render(c, h.pages, fiber.StatusOK, pageOverview, v)
}

// enter is the link's first request: the token from the query into the cookie.
func (h handlers) enter(c *fiber.Ctx) error {
	id := param(c, "id")
	token := string(c.Request().URI().QueryArgs().Peek(queryToken))
	ps, err := h.svc.OpenPortal(c.UserContext(), id, token)
	if err != nil {
		return h.fail(c, err)
	}
	c.Cookie(&fiber.Cookie{
		Name: cookieToken, Value: token, Path: Prefix + ps.ID(),
		MaxAge:   int(ps.Remaining(h.svc.Now()) / time.Second),
		Secure:   h.secure || httpport.PublicHTTPS(c),
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
	})
	hostedpage.SetHeaders(c, hostedpage.NoContent)
	c.Set(fiber.HeaderLocation, Prefix+ps.ID())
	return c.SendStatus(fiber.StatusSeeOther)
}

// endpoint answers GET /portal/:id/endpoints/:endpoint: the endpoint, its actions and one
// page of its deliveries.
func (h handlers) endpoint(c *fiber.Ctx) error {
	o, err := h.open(c)
	if err != nil {
		return h.fail(c, err)
	}
	v := h.frame(o, "endpoints")
	if err := h.endpointView(c, o, &v, param(c, "endpoint")); err != nil {
		return h.fail(c, err)
	}
	v.Notice = notices[string(c.Request().URI().QueryArgs().Peek(queryNotice))]
	return render(c, h.pages, fiber.StatusOK, pageEndpoint, v)
}

func (h handlers) endpointView(c *fiber.Ctx, o opened, v *view, id string) error {
	e, err := h.svc.PortalEndpoint(c.UserContext(), o.ps, id)
	if err != nil {
		return err
	}
	ev := endpointOf(v.Base, e)
	v.Endpoint = &ev
	ds, next, err := h.svc.PortalDeliveries(c.UserContext(), o.ps, id, string(c.Request().URI().QueryArgs().Peek(queryAfter)))
	if err != nil {
		return err
	}
	for _, d := range ds {
		v.Deliveries = append(v.Deliveries, deliveryLine{
			ID: d.Delivery.ID(), Href: v.Base + "/deliveries/" + d.Delivery.ID(), EventType: d.EventType,
			Status: string(d.Delivery.Status()), Attempts: len(d.Delivery.Attempts()), Created: when(d.Delivery.Created()),
		})
	}
	if next != "" {
		v.Older = ev.Href + "?" + queryAfter + "=" + next
	}
	return nil
}

// delivery answers GET /portal/:id/deliveries/:delivery: every attempt, and the retry.
func (h handlers) delivery(c *fiber.Ctx) error {
	o, err := h.open(c)
	if err != nil {
		return h.fail(c, err)
	}
	v := h.frame(o, "endpoints")
	if err := h.deliveryView(c, o, &v, param(c, "delivery")); err != nil {
		return h.fail(c, err)
	}
	v.Notice = notices[string(c.Request().URI().QueryArgs().Peek(queryNotice))]
	return render(c, h.pages, fiber.StatusOK, pageDelivery, v)
}

func (h handlers) deliveryView(c *fiber.Ctx, o opened, v *view, id string) error {
	d, ev, err := h.svc.PortalDelivery(c.UserContext(), o.ps, id)
	if err != nil {
		return err
	}
	dv := &deliveryView{
		ID: d.ID(), Href: v.Base + "/deliveries/" + d.ID(), EventID: d.Event(),
		EndpointHref: v.Base + "/endpoints/" + d.Endpoint(), EndpointURL: d.Endpoint(),
		Status: string(d.Status()), Created: when(d.Created()),
	}
	if ev != nil {
		dv.EventType = ev.Event.Type
	}
	if e, err := h.svc.PortalEndpoint(c.UserContext(), o.ps, d.Endpoint()); err == nil {
		dv.EndpointURL = e.URL()
	}
	if next := d.NextAttemptAt(); !next.IsZero() && d.Status() == domain.DeliveryPending {
		dv.NextAttempt = when(next)
	}
	for i, a := range d.Attempts() {
		dv.Attempts = append(dv.Attempts, attemptView{
			Number: i + 1, At: when(a.At), Status: a.Status, DurationMS: a.Duration.Milliseconds(),
			ErrorCode: string(a.ErrorCode), Error: a.Message(),
		})
	}
	v.Delivery = dv
	return nil
}

// events answers GET /portal/:id/events: one page of the recent events.
func (h handlers) events(c *fiber.Ctx) error {
	o, err := h.open(c)
	if err != nil {
		return h.fail(c, err)
	}
	evs, next, err := h.svc.PortalEvents(c.UserContext(), o.ps, string(c.Request().URI().QueryArgs().Peek(queryAfter)))
	if err != nil {
		return h.fail(c, err)
	}
	v := h.frame(o, "events")
	for _, pe := range evs {
		line := eventLine{ID: pe.Event.Event.ID, Type: pe.Event.Event.Type, Created: when(time.Unix(pe.Event.Event.Created, 0))}
		if pe.Delivery != nil {
			line.Deliveries = []eventDelivery{{Href: v.Base + "/deliveries/" + pe.Delivery.ID(), Status: string(pe.Delivery.Status())}}
		} else {
			for _, t := range pe.Event.Targets {
				if t.Endpoint != "" && o.ps.Covers(t.Endpoint) {
					line.Deliveries = append(line.Deliveries, eventDelivery{Href: v.Base + "/deliveries/" + t.Delivery, Status: string(t.Status)})
				}
			}
		}
		v.Events = append(v.Events, line)
	}
	if next != "" {
		v.Older = v.Base + "/events?" + queryAfter + "=" + next
	}
	return render(c, h.pages, fiber.StatusOK, pageEvents, v)
}

// action opens the session for a form POST and checks, in this order, that the object is one
// the session shows (show: 404 otherwise), that the session may act (403), then the form's
// CSRF value (403).
func (h handlers) action(c *fiber.Ctx, show func(opened) error) (opened, error) {
	o, err := h.open(c)
	if err != nil {
		return o, err
	}
	if err := show(o); err != nil {
		return o, err
	}
	if !o.ps.Writable() {
		return o, app.ErrPortalReadOnly
	}
	if !o.ps.CSRFValid(o.token, string(c.Request().PostArgs().Peek(fieldCSRF))) {
		return o, errCSRF
	}
	return o, nil
}

// errCSRF: a form POST without the page's CSRF value.
var errCSRF = errors.New("the form's CSRF value is missing or wrong")

// retry answers POST /portal/:id/deliveries/:delivery/retry: the API's retry, then back to
// the delivery (303) with a notice.
func (h handlers) retry(c *fiber.Ctx) error {
	id := param(c, "delivery")
	o, err := h.action(c, func(o opened) error { _, _, err := h.svc.PortalDelivery(c.UserContext(), o.ps, id); return err })
	if err == nil {
		_, err = h.svc.PortalRetryDelivery(c.UserContext(), o.ps, fiberx.RequestID(c), id)
	}
	if err != nil {
		return h.failAction(c, o, err, Prefix+param(c, "id")+"/deliveries/"+id)
	}
	return seeOther(c, Prefix+o.ps.ID()+"/deliveries/"+id+"?"+queryNotice+"=retried")
}

// rotateSecret answers POST /portal/:id/endpoints/:endpoint/rotate_secret: the new secret,
// shown on this answer only (200, not a redirect, so it is in no address or history).
func (h handlers) rotateSecret(c *fiber.Ctx) error {
	id := param(c, "endpoint")
	o, err := h.action(c, func(o opened) error { _, err := h.svc.PortalEndpoint(c.UserContext(), o.ps, id); return err })
	var e *domain.Endpoint
	if err == nil {
		e, err = h.svc.PortalRotateSecret(c.UserContext(), o.ps, fiberx.RequestID(c), id)
	}
	if err != nil {
		return h.failAction(c, o, err, Prefix+param(c, "id")+"/endpoints/"+id)
	}
	v := h.frame(o, "endpoints")
	ev := endpointOf(v.Base, e)
	v.Endpoint, v.Secret = &ev, e.Secret()
	return render(c, h.pages, fiber.StatusOK, pageRotated, v)
}

// setEnabled answers POST /portal/:id/endpoints/:endpoint/disable and …/enable: the API's
// update of status, then back to the endpoint (303) with a notice.
func (h handlers) setEnabled(enabled bool) fiber.Handler {
	notice := "disabled"
	if enabled {
		notice = "enabled"
	}
	return func(c *fiber.Ctx) error {
		id := param(c, "endpoint")
		o, err := h.action(c, func(o opened) error { _, err := h.svc.PortalEndpoint(c.UserContext(), o.ps, id); return err })
		if err == nil {
			_, err = h.svc.PortalSetEnabled(c.UserContext(), o.ps, fiberx.RequestID(c), id, enabled)
		}
		if err != nil {
			return h.failAction(c, o, err, Prefix+param(c, "id")+"/endpoints/"+id)
		}
		return seeOther(c, Prefix+o.ps.ID()+"/endpoints/"+id+"?"+queryNotice+"="+notice)
	}
}

// seeOther sends the browser to a page of the portal after an action.
func seeOther(c *fiber.Ctx, to string) error {
	hostedpage.SetHeaders(c, hostedpage.NoContent)
	c.Set(fiber.HeaderLocation, to)
	return c.SendStatus(fiber.StatusSeeOther)
}

// failAction answers an action's error: a read-only session or a missing CSRF value is 403, an
// action the object's state refuses (a retry to a disabled endpoint) 409 with the reason and
// a way back; anything else as fail.
func (h handlers) failAction(c *fiber.Ctx, o opened, err error, back string) error {
	switch {
	case errors.Is(err, app.ErrPortalReadOnly), errors.Is(err, errCSRF):
		v := h.frame(o, "endpoints")
		v.CSRF = ""
		return render(c, h.pages, fiber.StatusForbidden, pageForbidden, v)
	}
	if k := domainerr.KindOf(err); k == domainerr.Invalid || k == domainerr.Conflict {
		v := h.frame(o, "endpoints")
		v.Message, v.Back = domainerr.As(err).Message, back
		return render(c, h.pages, fiber.StatusConflict, pageRefused, v)
	}
	return h.fail(c, err)
}

// fail answers an error: the one "not found" page for everything the session does not open or
// show, the error page (logged) for anything else.
func (h handlers) fail(c *fiber.Ctx, err error) error {
	if errors.Is(err, app.ErrPortalNotFound) {
		return render(c, h.pages, fiber.StatusNotFound, pageNotFound, view{})
	}
	h.log.ErrorContext(c.UserContext(), "webhook portal", "error", err.Error(), "request_id", fiberx.RequestID(c), "path", c.Path())
	return render(c, h.pages, fiber.StatusInternalServerError, pageError, view{RequestID: fiberx.RequestID(c)})
}

func endpointOf(base string, e *domain.Endpoint) endpointView {
	evs := e.EnabledEvents()
	events := strings.Join(evs, ", ")
	if len(evs) == 1 && evs[0] == "*" {
		events = "every event type (*)"
	}
	return endpointView{
		ID: e.ID(), Href: base + "/endpoints/" + e.ID(), URL: e.URL(), Status: string(e.Status()),
		Events: events, Description: e.Description(),
	}
}

// when is a time as the pages show it.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
