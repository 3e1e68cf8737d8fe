package app

import (
	"context"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/webhooks-svc/internal/domain"
)

// CreateEndpoint is the client's input to Create.
type CreateEndpoint struct {
	URL           string
	EnabledEvents []string // nil when not sent
	Description   *string
	APIVersion    *string
	Metadata      map[string]string
}

// Create validates the input and stores a new, enabled endpoint with a fresh signing secret,
// and the webhook_endpoint.created event with it.
func (s *Service) Create(ctx context.Context, caller Caller, in CreateEndpoint) (*domain.Endpoint, error) {
	e, err := domain.New(domain.NewParams{
		ID:            s.IDs.New(ids.WebhookEndpoint),
		Account:       caller.Account,
		Livemode:      caller.Livemode,
		Secret:        s.secret(),
		Created:       s.Now(),
		URL:           in.URL,
		CheckHost:     s.checkHost(),
		EnabledEvents: in.EnabledEvents,
		Description:   in.Description,
		APIVersion:    in.APIVersion,
		Metadata:      in.Metadata,
	})
	if err != nil {
		return nil, err
	}
	// A create retried under its Idempotency-Key gets the endpoint the first stored.
	return s.Endpoints.Create(events.CausedBy(ctx, caller), e)
}
