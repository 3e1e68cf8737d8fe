// Package domain holds the webhook endpoint: its invariants (an HTTPS URL, known event types,
// bounded metadata), its state transitions, the errors that refuse bad input, and the
// repository port that stores it. It knows nothing of HTTP, MongoDB or Fiber.
package domain
