package app

import (
	"context"
	"fmt"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// CreateAgreement is the client's input to CreateAgreement; nil fields were not sent.
type CreateAgreement struct {
	Tenant     *TenantInput
	Methods    []domain.MethodParams // nil when not sent; IDs are assigned here
	Acceptance *domain.AcceptanceParams
	Metadata   map[string]string
}

// TenantInput is the tenant as the client gives it.
type TenantInput struct {
	Name, Email *string
}

// CreateAgreement validates the input, checks every method's token with the mode's processor
// and stores a new, active agreement with its payment_agreement.created event. Live mode is
// refused until a live processor is configured.
func (s *Service) CreateAgreement(ctx context.Context, caller Caller, in CreateAgreement) (*domain.Agreement, error) {
	p := domain.NewAgreementParams{
		ID: s.IDs.New(ids.PaymentAgreement), Account: caller.Account, Livemode: caller.Livemode, Created: s.Now(),
		Acceptance: in.Acceptance, Metadata: in.Metadata,
	}
	if in.Tenant != nil {
		p.TenantGiven, p.TenantName, p.TenantEmail = true, in.Tenant.Name, in.Tenant.Email
	}
	if in.Methods != nil {
		p.Methods = make([]domain.MethodParams, len(in.Methods))
		for i, m := range in.Methods {
			m.ID = s.IDs.New(ids.PaymentMethod)
			p.Methods[i] = m
		}
	}
	a, err := domain.NewAgreement(p)
	if err != nil {
		return nil, err
	}
	proc := s.processor(caller.Livemode)
	if proc == nil {
		return nil, errProcessorNotConfigured
	}
	for i, m := range p.Methods {
		if msg := proc.CheckToken(domain.MethodType(*m.Type), *m.Token); msg != "" {
			param := fmt.Sprintf("payment_methods[%d].token", i)
			return nil, domainerr.InvalidParam(param, "Invalid %s: %s", param, msg)
		}
	}
	// A create retried under its Idempotency-Key gets the agreement the first stored.
	return s.Agreements.Create(events.CausedBy(ctx, caller), a)
}
