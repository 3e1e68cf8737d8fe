package domain

import (
	"context"
	"errors"

	"rentalplatform/libs/listing"
)

// CaseFilter narrows a case list; zero fields do not filter, and the fields given combine.
type CaseFilter struct {
	Status            Status
	DebtorCountry     string
	DebtorType        DebtorType
	CreditorReference string
}

// ErrReferenceTaken is what CaseRepository.Create returns when the account already has a case
// in the mode with the new case's reference: the caller draws another and tries again.
var ErrReferenceTaken = errors.New("collection case reference taken")

// CaseRepository stores cases. Methods taking an account and mode are scoped to them: a case
// of another account or mode is CaseNotFound, never returned. The events a case raised
// (its Recorder) are rendered and stored with it, in the same write, in its outbox.
type CaseRepository interface {
	// Create stores a new case and returns the case stored: c, or, for a create retried under an Idempotency-Key that
	// already created one, the one stored then (nothing is stored again).
	// It returns ErrReferenceTaken when another case has c's reference (nothing stored).
	Create(ctx context.Context, c *Case) (*Case, error)
	Get(ctx context.Context, id, account string, livemode bool) (*Case, error)
	// GetByReference returns the caller's case with that reference, or ReferenceNotFound.
	GetByReference(ctx context.Context, reference, account string, livemode bool) (*Case, error)
	// Update reads the case, passes it to fn and stores the result unless fn fails (then
	// nothing is stored and fn's error is returned). fn may run more than once (a concurrent
	// write won), so it only changes the case it is given.
	Update(ctx context.Context, id, account string, livemode bool, fn func(*Case) error) (*Case, error)
	// List returns one page of the caller's cases, newest first, and whether more lie beyond
	// it in the direction read.
	List(ctx context.Context, account string, livemode bool, f CaseFilter, p listing.Params) ([]*Case, bool, error)
}

// FileRepository stores the records of uploaded files (their content is the Contents port's).
type FileRepository interface {
	// Create stores a new file record with its case_file.created event and returns the record
	// stored: f, or, for a create retried under an Idempotency-Key that
	// already created one, the one stored then (nothing is stored again).
	Create(ctx context.Context, f *File) (*File, error)
	// Get returns the caller's file of the case, or FileNotFound.
	Get(ctx context.Context, id, caseID, account string, livemode bool) (*File, error)
	// List returns one page of the case's files, newest first.
	List(ctx context.Context, caseID, account string, livemode bool, p listing.Params) ([]*File, bool, error)
}
