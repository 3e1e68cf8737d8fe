package domain

import (
	"sort"
	"strings"
)

// Resource is a family of API objects a restricted key can be granted access to.
type Resource string

// The resources of restricted-key permissions. Every routed path belongs to exactly one (see
// ResourceOf).
const (
	ResVerificationSessions Resource = "verification_sessions"
	ResCollectionCases      Resource = "collection_cases"
	ResPaymentRequests      Resource = "payment_requests"
	ResPaymentAgreements    Resource = "payment_agreements"
	ResWebhookEndpoints     Resource = "webhook_endpoints"
	ResEvents               Resource = "events"
)

// Resources lists every resource, in the order the API shows them.
var resources = []Resource{
	ResVerificationSessions, ResCollectionCases, ResPaymentRequests, ResPaymentAgreements,
	ResWebhookEndpoints, ResEvents,
}

// Resources returns every resource a permission can name.
func Resources() []Resource { return append([]Resource(nil), resources...) }

// ResourceOf maps the first segment of an API path (after /v1/ and any test_helpers/) to the
// resource whose permission governs it. Objects that only exist inside another resource go
// with it: verification reports with their sessions, webhook deliveries and webhook portal
// sessions with the endpoints (retrying a delivery, or opening a portal to the endpoints, is an
// action on an endpoint; the deliveries of one event, under /v1/events/:id/deliveries, are
// read with the event), the catalogue of event types with the events. ok is false for a
// segment that is not an API resource.
func ResourceOf(segment string) (Resource, bool) {
	switch segment {
	case "verification_sessions", "verification_reports":
		return ResVerificationSessions, true
	case "collection_cases":
		return ResCollectionCases, true
	case "payment_requests":
		return ResPaymentRequests, true
	case "payment_agreements":
		return ResPaymentAgreements, true
	case "webhook_endpoints", "webhook_deliveries", "webhook_portal_sessions":
		return ResWebhookEndpoints, true
	case "events", "event_types":
		return ResEvents, true
	}
	return "", false
}

// Access is what a restricted key may do with a resource. Write includes read.
type Access int

// Access levels, weakest first.
const (
	AccessNone Access = iota
	AccessRead
	AccessWrite
)

// String returns the level as the API spells it.
func (a Access) String() string {
	switch a {
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	}
	return "none"
}

// ParseAccess reads "none", "read" or "write".
func ParseAccess(s string) (Access, bool) {
	switch s {
	case "none":
		return AccessNone, true
	case "read":
		return AccessRead, true
	case "write":
		return AccessWrite, true
	}
	return AccessNone, false
}

// Permissions are a restricted key's access per resource; a resource not listed has none.
// The zero value grants nothing. A Permissions value is never modified after it is made.
type Permissions struct {
	m map[Resource]Access
}

// ParsePermissions validates a permissions parameter: resource name -> "none" | "read" |
// "write". Errors name the parameter as permissions.<resource>.
func ParsePermissions(in map[string]string) (Permissions, error) {
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names) // the first bad one reported is always the same one
	m := make(map[Resource]Access, len(in))
	for _, name := range names {
		r := Resource(name)
		if !knownResource(r) {
			return Permissions{}, invalid("permissions["+name+"]", "Unknown resource '%s'; expected one of %s.", name, resourceList())
		}
		a, ok := ParseAccess(in[name])
		if !ok {
			return Permissions{}, invalid("permissions["+name+"]",
				"Invalid access '%s' for %s: expected 'none', 'read' or 'write'.", in[name], name)
		}
		if a != AccessNone {
			m[r] = a
		}
	}
	return Permissions{m: m}, nil
}

func knownResource(r Resource) bool {
	for _, k := range resources {
		if k == r {
			return true
		}
	}
	return false
}

func resourceList() string {
	s := make([]string, len(resources))
	for i, r := range resources {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// Of returns the access granted to r.
func (p Permissions) Of(r Resource) Access { return p.m[r] }

// Map returns every resource with its access level, none included, for showing.
func (p Permissions) Map() map[Resource]Access {
	out := make(map[Resource]Access, len(resources))
	for _, r := range resources {
		out[r] = p.m[r]
	}
	return out
}
