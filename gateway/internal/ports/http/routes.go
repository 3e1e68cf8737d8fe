package http

import (
	"strings"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/domain"
)

// Services are the upstreams the public API is routed to.
type Services struct {
	Verification *upstream.Upstream
	Collections  *upstream.Upstream
	Payments     *upstream.Upstream
	Webhooks     *upstream.Upstream
}

// All returns every service, for readiness checks.
func (s Services) All() []*upstream.Upstream {
	return []*upstream.Upstream{s.Verification, s.Collections, s.Payments, s.Webhooks}
}

// owner returns the service that owns a top-level resource, or nil.
func (s Services) owner(resource string) *upstream.Upstream {
	switch resource {
	case "verification_sessions", "verification_reports":
		return s.Verification
	case "collection_cases":
		return s.Collections
	case "payment_requests", "payment_agreements":
		return s.Payments
	case "webhook_endpoints", "events", "webhook_deliveries", "event_types", "webhook_portal_sessions":
		return s.Webhooks
	}
	return nil
}

// route is where a request goes.
type route struct {
	service *upstream.Upstream
	// upload marks /v1/collection_cases/:id/files, whose POST body is streamed under the
	// upload limit rather than buffered under the JSON limit.
	upload bool
	// download marks the answers passed on as they arrive rather than buffered:
	// /v1/collection_cases/:id/files/:file_id/content (a file of up to 25 MiB) and
	// /v1/events/stream (Server-Sent Events, for up to a minute).
	download bool
	// resource is what a restricted key needs permission for.
	resource domain.Resource
}

const apiPrefix = "/v1/"

// match routes a path. Resources match whole path segments: /v1/events and /v1/events/evt_1
// are routed, /v1/eventsfoo is not. /v1/test_helpers/<resource>/… goes to the owner of
// <resource>.
func (s Services) match(path string) (route, bool) {
	if !strings.HasPrefix(path, apiPrefix) || !cleanPath(path) {
		return route{}, false
	}
	rest := path[len(apiPrefix):]
	resource, tail, _ := strings.Cut(rest, "/")
	if resource == "test_helpers" {
		resource, _, _ = strings.Cut(tail, "/")
	}
	svc := s.owner(resource)
	res, known := domain.ResourceOf(resource)
	if svc == nil || !known {
		return route{}, false
	}
	return route{service: svc, upload: isUpload(rest), download: isDownload(rest) || rest == "events/stream", resource: res}, true
}

// isUpload reports whether rest (the path after /v1/) is collection_cases/<id>/files.
func isUpload(rest string) bool {
	id, ok := strings.CutPrefix(rest, "collection_cases/")
	if !ok {
		return false
	}
	id, ok = strings.CutSuffix(id, "/files")
	return ok && id != "" && !strings.Contains(id, "/")
}

// isDownload reports whether rest (the path after /v1/) is
// collection_cases/<id>/files/<file_id>/content.
func isDownload(rest string) bool {
	rest, ok := strings.CutPrefix(rest, "collection_cases/")
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, "/content")
	if !ok {
		return false
	}
	id, fileID, ok := strings.Cut(rest, "/files/")
	return ok && id != "" && fileID != "" && !strings.Contains(id, "/") && !strings.Contains(fileID, "/")
}

// cleanPath reports whether path is already in canonical form: only unreserved characters
// (RFC 3986 letters, digits, "-", ".", "_", "~") between single slashes, and no "." or ".."
// segments. Every id and reference the API issues fits. Anything else (percent-encoding, dot
// segments, doubled slashes) could be read differently by the gateway and by the service, so
// it is not routed at all: the path the gateway routes and signs is byte for byte the path the
// service sees.
func cleanPath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	segStart := 1
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			c := path[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
				return false
			}
			continue
		}
		seg := path[segStart:i]
		last := i == len(path)
		if seg == "." || seg == ".." || (seg == "" && !last) {
			return false
		}
		segStart = i + 1
	}
	return true
}

// Route names of requests the gateway does not route (an unknown path, the health checks) in
// spans and metrics.
const routeUnmatched = "unmatched"

// routeTemplates are the services' routes, as they register them with Fiber. The gateway routes
// by resource and never needs them to forward a request; they name its spans and metrics
// ("GET /v1/webhook_endpoints/:id"), so a dashboard tells one API operation from another. A
// route a service adds and this list lacks is named by its resource (routeNames.of).
var routeTemplates = []string{
	"/v1/verification_sessions",
	"/v1/verification_sessions/:id",
	"/v1/verification_sessions/:id/cancel",
	"/v1/verification_sessions/:id/redact",
	"/v1/verification_reports/:id",
	"/v1/test_helpers/verification_sessions/:id/advance",
	"/v1/collection_cases",
	"/v1/collection_cases/ref/:reference",
	"/v1/collection_cases/:id",
	"/v1/collection_cases/:id/pause",
	"/v1/collection_cases/:id/resume",
	"/v1/collection_cases/:id/close",
	"/v1/collection_cases/:id/payments",
	"/v1/collection_cases/:id/files",
	"/v1/collection_cases/:id/files/:file_id/content",
	"/v1/payment_agreements",
	"/v1/payment_agreements/:id",
	"/v1/payment_agreements/:id/cancel",
	"/v1/payment_requests",
	"/v1/payment_requests/bulk",
	"/v1/payment_requests/:id",
	"/v1/payment_requests/:id/cancel",
	"/v1/test_helpers/payment_requests/:id/advance",
	"/v1/webhook_endpoints",
	"/v1/webhook_endpoints/:id",
	"/v1/webhook_endpoints/:id/rotate_secret",
	"/v1/webhook_endpoints/:id/deliveries",
	"/v1/events",
	"/v1/events/stream",
	"/v1/events/:id",
	"/v1/events/:id/deliveries",
	"/v1/event_types",
	"/v1/webhook_deliveries",
	"/v1/webhook_deliveries/:id/retry",
	"/v1/webhook_portal_sessions",
}

// routeNames names the public listener's requests in spans and metrics (http.route): by the
// service's route template when one fits the path, else by resource ("/v1/<resource>/*" for
// anything below the resource's collection, "/v1/test_helpers/<resource>/*" for its test
// helpers). Every name is made once, here, so naming a request allocates nothing and the names
// are a bounded set.
type routeNames map[string]*resourceRoutes

type resourceRoutes struct {
	below, helpers string
	// templates of the resource's routes, split into segments after /v1/ ("" for a parameter).
	templates []template
}

type template struct {
	name     string
	helper   bool // under /v1/test_helpers/
	segments []string
}

func newRouteNames() routeNames {
	names := routeNames{}
	for _, r := range []string{
		"verification_sessions", "verification_reports", "collection_cases", "payment_requests",
		"payment_agreements", "webhook_endpoints", "events", "webhook_deliveries", "event_types",
		"webhook_portal_sessions",
	} {
		names[r] = &resourceRoutes{below: apiPrefix + r + "/*", helpers: apiPrefix + "test_helpers/" + r + "/*"}
	}
	for _, t := range routeTemplates {
		segs := strings.Split(strings.TrimPrefix(t, apiPrefix), "/")
		tpl := template{name: t}
		if segs[0] == "test_helpers" {
			tpl.helper, segs = true, segs[1:]
		}
		for i, s := range segs {
			if strings.HasPrefix(s, ":") {
				segs[i] = ""
			}
		}
		tpl.segments = segs
		r := names[segs[0]]
		r.templates = append(r.templates, tpl)
	}
	return names
}

// of names the request for path.
func (n routeNames) of(path string) string {
	rest, ok := strings.CutPrefix(path, apiPrefix)
	if !ok {
		return routeUnmatched
	}
	rest = strings.TrimSuffix(rest, "/")
	helper := false
	if after, ok := strings.CutPrefix(rest, "test_helpers/"); ok {
		helper, rest = true, after
	}
	resource, _, _ := strings.Cut(rest, "/")
	r, ok := n[resource]
	if !ok {
		return routeUnmatched
	}
	for _, t := range r.templates {
		if t.helper == helper && t.matches(rest) {
			return t.name
		}
	}
	if helper {
		return r.helpers
	}
	return r.below
}

// matches reports whether rest (the path after /v1/ and test_helpers/) fits the template: the
// same number of segments, literal ones equal, parameters not empty. Templates are listed
// with literal segments before parameters in the same place (ref/:reference before :id).
func (t template) matches(rest string) bool {
	for i, seg := range t.segments {
		var s string
		var more bool
		s, rest, more = strings.Cut(rest, "/")
		if (seg == "" && s == "") || (seg != "" && s != seg) || more != (i < len(t.segments)-1) {
			return false
		}
	}
	return true
}
