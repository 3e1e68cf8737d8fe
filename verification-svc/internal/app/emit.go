package app

import (
	"context"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"

	"rentalplatform/verification-svc/internal/domain"
)

// emit renders the event of every transition v has raised and hands it back to v, so the
// repository stores it with the change. caller is the request that caused the change; nil for
// background transitions (expiry). A session with a webhook_url sends its events there
// instead of to the account's endpoints (docs/events.md).
func (s *Service) emit(v *domain.Session, caller *Caller) error {
	for _, typ := range v.Raised() {
		obj := s.cfg.RenderSession(v)
		if typ == eventtype.VerificationReportCreated {
			obj = s.cfg.RenderReport(v)
		}
		c := events.Change{Type: typ, Account: v.Account(), Livemode: v.Livemode(), Object: obj, Caller: caller}
		if u := v.WebhookURL(); u != "" {
			c.Destination = &events.Destination{URL: u, Secret: v.WebhookSecret()}
		}
		ev, err := events.New(s.IDs, s.Now(), c)
		if err != nil {
			return err
		}
		if err := v.Emit(ev); err != nil {
			return err
		}
	}
	return nil
}

// change applies fn to the caller's session and stores it with its events. fn may run more
// than once (the store retries on a conflict), so it only changes the session it is given.
func (s *Service) change(ctx context.Context, caller Caller, id string, fn func(*domain.Session) error) (*domain.Session, error) {
	if !validID(id) {
		return nil, domain.SessionNotFound(id)
	}
	return s.Sessions.Update(ctx, id, caller.Account, caller.Livemode, func(v *domain.Session) error {
		if err := fn(v); err != nil {
			return err
		}
		return s.emit(v, &caller)
	})
}
