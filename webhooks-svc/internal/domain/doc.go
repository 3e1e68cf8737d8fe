// Package domain holds webhooks-svc's model: the webhook endpoint (an HTTPS URL, known event
// types, bounded metadata, its signing secrets and failing streak), the stored event with the
// deliveries it fanned out to, the delivery with its attempts and retry schedule, the errors
// that refuse bad input, and the repository ports that store them. It knows nothing of HTTP,
// MongoDB, Redis or Fiber.
package domain
