// Package http is the gateway's edge: the public listener, which authenticates API keys and
// forwards /v1 requests to the service that owns the resource, and the admin listener, which
// manages keys.
//
// The public listener decides in this order, so that a caller without a valid key learns
// nothing about which routes exist:
//
//  1. /healthz and /readyz answer without a key;
//  2. every other request needs a valid secret key (401 api_key_invalid);
//  3. the path must be clean and name a routed resource (404 route_missing);
//  4. the method must be GET, POST or DELETE (405 method_not_allowed);
//  5. the body must fit its limit (413 body_too_large) and not be content-encoded (415);
//  6. the request is signed and forwarded; the service's answer, error envelopes included,
//     passes through with the gateway's Request-Id.
package http
