// Package domain holds the gateway's API keys: what a key is, the shape of its secret, the
// rules an account id follows, and the repository port that stores keys. It knows nothing of
// HTTP, MongoDB or caching.
//
// A key is stored only as the SHA-256 of its secret. The secret itself exists in exactly two
// places: the response that created the key, and the caller's configuration.
package domain
