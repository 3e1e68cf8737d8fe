package app

import (
	"context"
	"fmt"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// MaxBulk is the most requests one bulk create takes.
const MaxBulk = 100

// CreateRequest is the client's input for one payment request; nil fields were not sent.
type CreateRequest struct {
	Agreement   *string
	Amount      *int64
	Currency    *string
	Description *string
	Metadata    map[string]string
}

// CreateRequest validates the input and stores a pending request against the caller's active
// agreement, with its payment_request.created event, and starts its first attempt at once (run
// by this process when it can, else queued: request_inline.go).
func (s *Service) CreateRequest(ctx context.Context, caller Caller, in CreateRequest) (*domain.Request, error) {
	rs, err := s.createRequests(ctx, caller, []CreateRequest{in}, false)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// CreateRequests is the bulk create: 1 to MaxBulk requests, all or nothing. Every element is
// checked before anything is stored, and the first invalid one is refused with a 400 naming
// requests[i].<param> (a missing or inactive agreement included); otherwise all are stored in
// one write.
func (s *Service) CreateRequests(ctx context.Context, caller Caller, in []CreateRequest) ([]*domain.Request, error) {
	if in == nil {
		return nil, domainerr.Missing("requests")
	}
	if len(in) == 0 || len(in) > MaxBulk {
		return nil, domainerr.InvalidParam("requests", "Invalid requests: a bulk create takes 1 to %d requests, got %d.", MaxBulk, len(in))
	}
	return s.createRequests(ctx, caller, in, true)
}

func (s *Service) createRequests(ctx context.Context, caller Caller, in []CreateRequest, bulk bool) ([]*domain.Request, error) {
	now := s.Now()
	out := make([]*domain.Request, len(in))
	agreements := map[string]*domain.Agreement{}
	for i, c := range in {
		prefix := ""
		if bulk {
			prefix = fmt.Sprintf("requests[%d].", i)
		}
		var agreement string
		if c.Agreement != nil {
			agreement = *c.Agreement
		}
		r, err := domain.NewRequest(domain.NewRequestParams{
			ID: s.IDs.New(ids.PaymentRequest), Account: caller.Account, Livemode: caller.Livemode, Created: now,
			Agreement: agreement, Amount: c.Amount, Currency: c.Currency, Description: c.Description, Metadata: c.Metadata, Param: prefix,
		})
		if err != nil {
			return nil, err
		}
		if err := s.checkAgreement(ctx, caller, c.Agreement, prefix, bulk, agreements); err != nil {
			return nil, err
		}
		out[i] = r
	}
	// A create retried under its Idempotency-Key (after a 502 or 504) gets the requests the
	// first stored, and starts their open first attempts again: that first request may have
	// died between storing and starting them, and an attempt that has run, or runs, makes the
	// second a no-op (its claim; a task already queued, its TaskID).
	out, err := s.Requests.Create(events.CausedBy(ctx, caller), out)
	if err != nil {
		return nil, err
	}
	for _, r := range out {
		n, due := r.Scheduled()
		if n == 0 { // a replayed request that is settled: nothing left to run
			continue
		}
		// Run by this process when its runners can take it (request_inline.go), else queued.
		if n == 1 && s.handInline(ctx, r.ID(), due) {
			continue
		}
		s.queueFirstAttempt(ctx, r.ID(), due)
	}
	return out, nil
}

// checkAgreement checks that the request names an active agreement of the caller. A single
// create answers a missing agreement with 404 resource_missing; a bulk create answers every
// invalid element with a 400 (resource_missing still), so one status covers the whole call.
func (s *Service) checkAgreement(ctx context.Context, caller Caller, id *string, prefix string, bulk bool, seen map[string]*domain.Agreement) error {
	param := prefix + "payment_agreement"
	if id == nil {
		return domainerr.Missing(param)
	}
	a, ok := seen[*id]
	if !ok {
		var err error
		if !ids.Valid(ids.PaymentAgreement, *id) {
			err = domain.AgreementNotFound(*id)
		} else {
			a, err = s.Agreements.Get(ctx, *id, caller.Account, caller.Livemode)
		}
		if domainerr.KindOf(err) == domainerr.NotFound {
			kind := domainerr.NotFound
			if bulk {
				kind = domainerr.Invalid
			}
			return domainerr.New(kind, domainerr.CodeResourceMissing, param, "No such payment_agreement: '%s'", *id)
		}
		if err != nil {
			return err
		}
		seen[*id] = a
	}
	if !a.Active() {
		return domainerr.New(domainerr.Invalid, domain.CodeAgreementNotActive, param,
			"The payment agreement %s is %s; payment requests can only be made against an active agreement.", a.ID(), a.Status())
	}
	return nil
}
