package app

import (
	"context"
	"time"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Bounds of how long the replaced secret keeps signing after a rotation.
const (
	DefaultSecretOverlap = 24 * time.Hour
	MaxSecretOverlap     = 7 * 24 * time.Hour
)

// RotateSecret gives the caller's endpoint a new signing secret. The old one keeps signing
// deliveries, next to the new one, for expiresIn (DefaultSecretOverlap when nil; 0 retires it
// at once). The secret is not part of the endpoint object, so no event is raised.
func (s *Service) RotateSecret(ctx context.Context, caller Caller, id string, expiresIn *int64) (*domain.Endpoint, error) {
	keep := DefaultSecretOverlap
	if expiresIn != nil {
		max := int64(MaxSecretOverlap / time.Second)
		if *expiresIn < 0 || *expiresIn > max {
			return nil, domain.Invalid(domain.CodeParameterInvalid, "expires_in",
				"Invalid expires_in: must be a number of seconds from 0 to %d, got %d.", max, *expiresIn)
		}
		keep = time.Duration(*expiresIn) * time.Second
	}
	if !validID(id) {
		return nil, domain.EndpointNotFound(id)
	}
	return s.Endpoints.Update(ctx, id, caller.Account, caller.Livemode, func(e *domain.Endpoint) error {
		e.RotateSecret(s.secret(), s.Now(), keep)
		return nil
	})
}
