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
	case "webhook_endpoints", "events", "webhook_deliveries":
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
	return route{service: svc, upload: isUpload(rest), resource: res}, true
}

// isUpload reports whether rest (the path after /v1/) is collection_cases/<id>/files.
func isUpload(rest string) bool {
	parts := strings.Split(rest, "/")
	return len(parts) == 3 && parts[0] == "collection_cases" && parts[1] != "" && parts[2] == "files"
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

// routeNames names the public listener's requests in spans and metrics (http.route). The
// gateway routes by resource, so it names by resource: "/v1/<resource>" for the resource's
// collection, "/v1/<resource>/*" for everything below it, "/v1/test_helpers/<resource>/*" for
// its test helpers; the services name their own routes precisely. Every name is made once,
// here, so naming a request allocates nothing and the names are a bounded set.
type routeNames map[string]resourceRoutes

type resourceRoutes struct{ collection, below, helpers string }

func newRouteNames() routeNames {
	names := routeNames{}
	for _, r := range []string{
		"verification_sessions", "verification_reports", "collection_cases", "payment_requests",
		"payment_agreements", "webhook_endpoints", "events", "webhook_deliveries",
	} {
		names[r] = resourceRoutes{
			collection: apiPrefix + r,
			below:      apiPrefix + r + "/*",
			helpers:    apiPrefix + "test_helpers/" + r + "/*",
		}
	}
	return names
}

// of names the request for path.
func (n routeNames) of(path string) string {
	rest, ok := strings.CutPrefix(path, apiPrefix)
	if !ok {
		return routeUnmatched
	}
	resource, tail, below := strings.Cut(rest, "/")
	helper := resource == "test_helpers"
	if helper {
		resource, _, _ = strings.Cut(tail, "/")
	}
	r, ok := n[resource]
	switch {
	case !ok:
		return routeUnmatched
	case helper:
		return r.helpers
	case below && tail != "":
		return r.below
	}
	return r.collection
}
