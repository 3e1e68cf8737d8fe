package http

import (
	"bytes"
	"context"
	"html"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/app"
	"rentalplatform/libs/apierr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/identity"
)

// Hosted pages are pages the public listener serves to a person in a browser without an API
// key: an applicant's verification page, /verify/<session id>?client_secret=…. Each belongs to
// a service, which checks the page's own credential (the session's client secret); the gateway
// routes by path prefix, rate-limits per client address, and signs the forwarded request with
// the hosted-page identity (identity.HostedAccount, no account). A service accepts that
// identity on the paths it declared as hosted pages only, and no other identity there
// (fiberx.Config.HostedPages), so services keep refusing whatever did not come through the
// gateway, and a hosted-page request never reaches an API route. What the gateway answers
// itself on these paths (rate limits, a service that cannot be reached, a body it refuses) is a
// small HTML page rather than the JSON envelope: a person reads it. A path that is no page, or
// a method no browser sends a page, gets the envelope, as on any other path.

// HostedLimits is the hosted pages' rate limit per client address (app.Service).
type HostedLimits interface {
	// HostedRateLimit takes one request of ip's hosted-page budget; ok false when no limit
	// applies (off, or the limiter unavailable).
	HostedRateLimit(ctx context.Context, ip netip.Addr) (d app.RateDecision, ok bool)
}

// hostedPage is one entry of the table: the paths under prefix go to service.
type hostedPage struct {
	prefix  string // "/verify/": a page's path is the prefix and at least one more character
	service *upstream.Upstream
	route   string // the name of its requests in spans and metrics
}

// hostedPages is the table of hosted pages, by path prefix. Another service's page is one more
// entry, and that service declares the prefix (service.WithHostedPages) and serves the page.
func hostedPages(s Services) []hostedPage {
	pages := []hostedPage{
		{prefix: "/verify/", service: s.Verification, route: "/verify/:id"},
		// The webhook portal: /portal/<session id> and the pages under it.
		{prefix: "/portal/", service: s.Webhooks, route: "/portal/:id"},
	}
	// A listener built without a page's service (a test's) does not serve the page.
	return slices.DeleteFunc(pages, func(h hostedPage) bool { return h.service == nil })
}

// hostedPage returns the hosted page path is under, if any.
func (p *public) hostedPage(path string) (hostedPage, bool) {
	for _, h := range p.hosted {
		if strings.HasPrefix(path, h.prefix) {
			return h, true
		}
	}
	return hostedPage{}, false
}

// routeName names a request for path in spans and metrics: its hosted page's route, else its
// API route (routeNames.of).
func (p *public) routeName(path string, names routeNames) string {
	if h, ok := p.hostedPage(path); ok {
		return h.route
	}
	return names.of(path)
}

// hostedMethods is the Allow header of a hosted page's 405.
const hostedMethods = "GET, HEAD, POST"

// serveHosted forwards a request for a hosted page: the client address's hosted-page budget
// instead of a key's, and the hosted-page identity signed. A 404 of the page (its credential
// did not open it: every wrong, expired or other session's secret gets the same one) counts as
// a failed authentication of the address, like a wrong API key, so an address that guesses
// secrets is blocked (429) as one that guesses keys is, on the whole public listener.
func (p *public) serveHosted(c *fiber.Ctx, page hostedPage) error {
	ip := clientIP(c)
	if wait, blocked := p.limits.Blocked(ip); blocked {
		return hostedTooMany(c, wait)
	}
	if p.hostedLimits != nil {
		if d, ok := p.hostedLimits.HostedRateLimit(c.UserContext(), ip); ok && !d.Allowed {
			return hostedTooMany(c, d.RetryAfter)
		}
	}
	method, path := c.Method(), c.Path()
	if !cleanPath(path) || len(path) <= len(page.prefix) {
		// Not a page at all: answered as any path nothing takes.
		return routeMissing(method, path)
	}
	switch method {
	case fiber.MethodGet, fiber.MethodPost:
		method = fiberx.KnownMethod(method)
	case fiber.MethodHead:
		method = fiber.MethodGet // the service answers a GET; fasthttp leaves the body out
	default:
		// Not something a browser sends a page: the envelope, as for any route.
		c.Set(fiber.HeaderAllow, hostedMethods)
		return apierr.New(fiber.StatusMethodNotAllowed, apierr.InvalidRequest, apierr.CodeMethodNotAllowed,
			"Method "+method+" is not allowed on "+path+"; use GET or POST.")
	}
	if enc := c.Request().Header.Peek(fiber.HeaderContentEncoding); len(enc) > 0 && !bytes.EqualFold(enc, []byte("identity")) {
		return hostedAnswer(c, fiber.StatusUnsupportedMediaType, "Request not accepted", "The request could not be read.")
	}

	out := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(out)
	defer fasthttp.ReleaseResponse(resp)
	in := &c.Request().Header
	out.Header.SetMethod(method)
	page.service.SetURI(out, path, c.Request().URI().QueryString())
	// Cookie: a page may keep its credential in a cookie of its own path (the webhook
	// portal's), which only a browser on the gateway's address sends.
	for _, h := range []string{fiber.HeaderContentType, fiber.HeaderAccept, fiber.HeaderAcceptLanguage, fiber.HeaderUserAgent, fiber.HeaderCookie} {
		if v := in.Peek(h); len(v) > 0 {
			out.Header.SetBytesV(h, v)
		}
	}
	setForwarded(c, &out.Header)
	if method == fiber.MethodPost {
		// A form: small, read whole under the JSON body limit.
		if _, err := p.attachBody(c, out, false, nil); err != nil {
			status := fiber.StatusBadRequest
			if e := apierr.From(err); e != nil {
				status = e.Status
			}
			return hostedAnswer(c, status, "Request not accepted", "The request could not be read.")
		}
	}

	ctx, span := p.forwardSpan(c, page.service, method)
	if span.IsRecording() {
		defer span.End()
	}
	fiberx.InjectTraceContext(ctx, p.propagator, &out.Header)
	signRequest(p.signer, &out.Header, identity.Identity{Account: identity.HostedAccount, RequestID: fiberx.RequestID(c)}, method, path)
	if err := page.service.Do(out, resp); err != nil {
		if span.IsRecording() {
			span.RecordError(err)
			span.SetStatus(codes.Error, "upstream call failed")
		}
		p.log.WarnContext(ctx, "upstream call failed", "upstream", page.service.Name(), "error", err.Error(),
			"request_id", fiberx.RequestID(c), "method", method, "path", page.route)
		return hostedAnswer(c, fromUpstream(err).Status, "Page unavailable", "This page is not available right now. Try again in a few minutes.")
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode()))
	}
	copyResponse(c, resp)
	if resp.StatusCode() == fiber.StatusNotFound {
		// Counted after the answer is made: the address learns it is blocked on its next request.
		p.limits.AuthFailed(c.UserContext(), ip)
	}
	return nil
}

// hostedTooMany is the 429 of a hosted page: the address is over its budget, or blocked for
// failed authentications.
func hostedTooMany(c *fiber.Ctx, retry time.Duration) error {
	c.Set(fiber.HeaderRetryAfter, seconds(max(retry, time.Second)))
	return hostedAnswer(c, fiber.StatusTooManyRequests, "Too many requests",
		"Too many requests came from your network. Wait a minute, then reload the page.")
}

// hostedAnswer answers with a small HTML page of the gateway's own, with the headers of every
// hosted page: nothing cached, no Referer sent on (the page's URL holds a secret), never
// framed, nothing loaded.
func hostedAnswer(c *fiber.Ctx, status int, title, text string) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	t := html.EscapeString(title)
	return c.Status(status).SendString(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + t + ` – Rental Platform</title>
</head>
<body>
<main>
<h1>` + t + `</h1>
<p>` + html.EscapeString(text) + `</p>
<p>Reference: <code>` + html.EscapeString(fiberx.RequestID(c)) + `</code></p>
</main>
</body>
</html>
`)
}
