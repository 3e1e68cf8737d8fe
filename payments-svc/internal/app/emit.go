package app

import (
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"

	"rentalplatform/payments-svc/internal/domain"
)

// emitter is an aggregate that keeps the events its change raised.
type emitter interface{ Emit(events.Event) }

// emit builds the event of a change to an object (rendered now, as the API shows it) and keeps
// it on the aggregate, which stores it in the same write as the change. caller is nil for
// background transitions (the engine).
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

func (s *Service) emitRequest(r *domain.Request, typ string, caller *Caller) error {
	return s.emit(r, typ, r.Account(), r.Livemode(), s.cfg.RenderRequest(r), caller, nil)
}

// emitCharge keeps the event of a charge's outcome (charge.succeeded or charge.failed) on the
// request that recorded it.
func (s *Service) emitCharge(r *domain.Request, t domain.Try) error {
	typ := eventtype.ChargeFailed
	if t.Succeeded {
		typ = eventtype.ChargeSucceeded
	}
	return s.emit(r, typ, r.Account(), r.Livemode(), s.cfg.RenderCharge(r, t), nil, nil)
}

func (s *Service) emitAgreement(a *domain.Agreement, typ string, caller *Caller, previous map[string]any) error {
	return s.emit(a, typ, a.Account(), a.Livemode(), s.cfg.RenderAgreement(a), caller, previous)
}

// requestEvent is the event type of each outcome of an attempt.
var requestEvent = map[domain.Outcome]string{
	domain.OutcomeSucceeded: eventtype.PaymentRequestSucceeded,
	domain.OutcomeRetrying:  eventtype.PaymentRequestRetrying,
	domain.OutcomeFailed:    eventtype.PaymentRequestFailed,
}
