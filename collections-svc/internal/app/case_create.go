package app

import (
	"context"
	"errors"
	"fmt"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/collections-svc/internal/domain"
)

// referenceTries bounds the draws of a new case's reference. With a billion references a
// second draw is needed about once per million cases an account holds; twenty taken in a row
// means something other than chance (a broken random source).
const referenceTries = 20

// CreateCase is the client's input to CreateCase; nil fields were not sent.
type CreateCase struct {
	AmountToRecover   *int64
	Currency          *string
	Debtor            *domain.DebtorParams
	DueDate           *string
	CreditorReference *string
	Metadata          map[string]string
}

// CreateCase validates the input and stores a new, active case with its
// collection_case.created event, under a reference no other case of the account and mode has:
// the store's unique index decides, and a taken reference is drawn again.
func (s *Service) CreateCase(ctx context.Context, caller Caller, in CreateCase) (*domain.Case, error) {
	p := domain.NewCaseParams{
		ID: s.IDs.NewUUIDv7(ids.CollectionCase), Account: caller.Account, Livemode: caller.Livemode,
		Partner: s.cfg.Partner, Created: s.Now(),
		AmountToRecover: in.AmountToRecover, Currency: in.Currency, Debtor: in.Debtor, DueDate: in.DueDate,
		CreditorReference: in.CreditorReference, Metadata: in.Metadata,
	}
	ctx = events.CausedBy(ctx, caller)
	for range referenceTries {
		p.Reference = s.newReference()
		c, err := domain.NewCase(p)
		if err != nil {
			return nil, err
		}
		// A create retried under its Idempotency-Key gets the case the first stored.
		stored, err := s.Cases.Create(ctx, c)
		if errors.Is(err, domain.ErrReferenceTaken) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return stored, nil
	}
	return nil, fmt.Errorf("create collection case: %d references in a row were taken", referenceTries)
}

func (s *Service) newReference() string {
	b := make([]byte, domain.ReferenceChars)
	s.Random(b)
	return domain.NewReference(b)
}
