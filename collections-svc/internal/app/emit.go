package app

import (
	"context"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"

	"rentalplatform/collections-svc/internal/domain"
)

// emitter is an aggregate that keeps the events its change raised.
type emitter interface{ Emit(events.Event) }

// emit builds the event of a change to an object (rendered now, as the API shows it) and keeps
// it on the aggregate, which stores it in the same write as the change.
func (s *Service) emit(agg emitter, typ, account string, livemode bool, object any, caller *Caller, previous map[string]any) error {
	ev, err := events.New(s.IDs, s.Now(), events.Change{
		Type: typ, Account: account, Livemode: livemode, Object: object, Previous: previous, Caller: caller,
	})
	if err != nil {
		return err
	}
	agg.Emit(ev)
	return nil
}

// change applies fn to the caller's case and stores it with a collection_case.updated event
// whose previous_attributes are the top-level fields fn changed (with their old values), and
// collection_case.closed when fn closed it; fn may add events of its own (a debt payment's).
// fn may run more than once (the store retries on a conflict), so it only changes the case it
// is given.
func (s *Service) change(ctx context.Context, caller Caller, id string, fn func(*domain.Case) error) (*domain.Case, error) {
	if !validCaseID(id) {
		return nil, domain.CaseNotFound(id)
	}
	return s.Cases.Update(ctx, id, caller.Account, caller.Livemode, func(c *domain.Case) error {
		before, err := events.FieldsOf(s.cfg.RenderCase(c))
		if err != nil {
			return err
		}
		wasClosed := c.Status() == domain.StatusClosed
		if err := fn(c); err != nil {
			return err
		}
		obj := s.cfg.RenderCase(c)
		after, err := events.FieldsOf(obj)
		if err != nil {
			return err
		}
		if err := s.emit(c, eventtype.CollectionCaseUpdated, c.Account(), c.Livemode(), obj, &caller, events.Changed(before, after)); err != nil {
			return err
		}
		if !wasClosed && c.Status() == domain.StatusClosed {
			return s.emit(c, eventtype.CollectionCaseClosed, c.Account(), c.Livemode(), obj, &caller, nil)
		}
		return nil
	})
}
