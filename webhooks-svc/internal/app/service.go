// Package app holds the webhook endpoint use cases, one method of Service each, and the ports
// they need besides the repository.
package app

import (
	"time"

	"rentalplatform/libs/ids"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function such as time.Now to Clock.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

// IDs makes time-ordered object ids; *ids.Generator is one.
type IDs interface {
	New(prefix string) string
}

// Caller is who a use case acts for: the gateway-verified account and mode. Every use case
// sees and changes only the caller's endpoints.
type Caller struct {
	Account  string
	Livemode bool
}

// Service runs the webhook endpoint use cases.
type Service struct {
	repo  domain.Repository
	clock Clock
	ids   IDs
	// secret makes a new endpoint's signing secret.
	secret func() string
}

// New returns a Service storing endpoints in repo.
func New(repo domain.Repository, clock Clock, idgen IDs) *Service {
	return &Service{
		repo:  repo,
		clock: clock,
		ids:   idgen,
		// Standard Webhooks secrets: whsec_ + base64 of the key; 32 bytes is an HMAC-SHA256
		// key of full strength.
		secret: func() string { return ids.StdSecret("whsec_", 32) },
	}
}

// validID reports whether id can name an endpoint at all; anything else is answered as not
// found without asking the store.
func validID(id string) bool { return ids.Valid(ids.WebhookEndpoint, id) }
