package app

import (
	"context"
	"errors"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/validate"

	"rentalplatform/webhooks-svc/internal/domain"
)

// portalTokenBytes is the randomness of a portal token (base62, after wpst_).
const portalTokenBytes = 32

// CreatePortalSession is the input of POST /v1/webhook_portal_sessions; nil fields were not
// given.
type CreatePortalSession struct {
	Endpoint  *string
	Access    *string
	ReturnURL *string
}

// CreatePortalSession makes a webhook portal link for the caller's account and mode: a
// session (domain.PortalSession) and its token, which is returned here once and stored only as
// a hash. Bad access or return_url is refused before the endpoint is looked up; an endpoint
// that is not the caller's is 404 naming endpoint.
func (s *Service) CreatePortalSession(ctx context.Context, caller Caller, in CreatePortalSession) (*domain.PortalSession, string, error) {
	token := ids.Secret(domain.PortalTokenPrefix, portalTokenBytes)
	p := domain.NewPortalSessionParams{
		ID: s.IDs.New(domain.PortalSessionIDPrefix), Account: caller.Account, Livemode: caller.Livemode,
		Token: token, Created: s.Now(), Access: in.Access, ReturnURL: in.ReturnURL,
	}
	if in.Endpoint != nil {
		p.Endpoint = *in.Endpoint
	}
	ps, err := domain.NewPortalSession(p)
	if err != nil {
		return nil, "", err
	}
	if in.Endpoint != nil {
		if err := s.checkPortalEndpoint(ctx, caller, *in.Endpoint); err != nil {
			return nil, "", err
		}
	}
	if err := s.Portals.Create(ctx, ps); err != nil {
		return nil, "", err
	}
	return ps, token, nil
}

// checkPortalEndpoint refuses an endpoint parameter that names no endpoint of the caller's.
func (s *Service) checkPortalEndpoint(ctx context.Context, caller Caller, id string) error {
	if id == "" {
		return domainerr.InvalidParam("endpoint", "Invalid endpoint: expected a webhook endpoint id (we_…), got ''.")
	}
	_, err := s.Get(ctx, caller, id)
	if errors.Is(err, domain.ErrNotFound) {
		return domainerr.New(domainerr.NotFound, domainerr.CodeResourceMissing, "endpoint",
			"No such webhook_endpoint: '%s'", validate.Shown(id))
	}
	return err
}
