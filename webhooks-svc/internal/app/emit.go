package app

import (
	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// emit raises an event of type typ about e, as it is now, caused by caller (nil: a background
// transition). previous holds the changed top-level fields with their old values (updates).
func (s *Service) emit(e *domain.Endpoint, typ string, caller *Caller, previous map[string]any) error {
	ev, err := events.New(s.IDs, s.Now(), events.Change{
		Type: typ, Account: e.Account(), Livemode: e.Livemode(), Object: s.cfg.RenderEndpoint(e), Previous: previous, Caller: caller,
	})
	if err != nil {
		return err
	}
	e.Emit(ev)
	return nil
}
