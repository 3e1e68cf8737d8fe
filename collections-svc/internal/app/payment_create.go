package app

import (
	"context"

	"rentalplatform/libs/ids"

	"rentalplatform/collections-svc/internal/domain"
)

// RecordPayment is the client's input to RecordPayment; nil fields were not sent.
type RecordPayment struct {
	Amount    *int64
	PaidAt    *string
	Reference *string
}

// RecordPayment records a debt payment on the caller's case and lowers its remainder, in one
// write with debt_payment.created and collection_case.updated (and collection_case.closed when
// the payment clears the remainder). It returns the payment and the case as stored; a request
// retried under its Idempotency-Key gets the payment it recorded, and records nothing more.
func (s *Service) RecordPayment(ctx context.Context, caller Caller, id string, in RecordPayment) (domain.Payment, *domain.Case, error) {
	var pay domain.Payment
	c, err := s.change(ctx, caller, id, func(c *domain.Case) error {
		var err error
		pay, err = c.RecordPayment(domain.PaymentParams{
			ID: s.IDs.New(ids.DebtPayment), Key: caller.IdempotencyKey, Created: s.Now(), Amount: in.Amount, PaidAt: in.PaidAt, Reference: in.Reference,
		})
		return err
	})
	if err != nil {
		return domain.Payment{}, nil, err
	}
	return pay, c, nil
}
