// Package domain holds the gateway's rules: what an API key is (secret or restricted, its
// permissions per resource, its rolling and expiry, its own rate limit), the shape of its
// secret, the rules an account id follows and the repository port that stores keys; and what
// makes two requests "the same" for idempotency. It knows nothing of HTTP, MongoDB, Redis or
// caching.
//
// A key is stored only as the SHA-256 of its secret. The secret itself exists in exactly two
// places: the response that created the key, and the caller's configuration.
package domain
