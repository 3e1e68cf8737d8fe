// Package http is the gateway's edge: the public listener, which authenticates API keys and
// forwards /v1 requests to the service that owns the resource, and the admin listener, which
// manages keys.
//
// The public listener decides in this order, so that a caller without a valid key learns
// nothing about which routes exist:
//
//  1. /healthz and /readyz answer without a key, and so do the hosted pages (/verify/…,
//     hosted.go), which their service authorises by their own credential, and which are
//     limited per client address instead;
//  2. a client address blocked for failing authentication too often gets 429;
//  3. every other request needs a valid key (401 api_key_invalid; failures are counted per
//     address);
//  4. the account's (or key's) rate limit (429 rate_limited; RateLimit-* headers on every
//     limited answer);
//  5. the path must be clean and name a routed resource (404 route_missing);
//  6. the method must be GET, POST or DELETE (405 method_not_allowed);
//  7. a restricted key needs permission for the resource (403 permission_denied);
//  8. an Idempotency-Key must be well formed (400);
//  9. the body must fit its limit (413 body_too_large) and not be content-encoded (415);
//  10. a POST with an Idempotency-Key claims the key (replay, 400 reused, 409 in use, or 503
//     when Redis is down);
//  11. the request is signed and forwarded; the service's answer, error envelopes included,
//     passes through with the gateway's Request-Id (and is kept for replays).
package http
