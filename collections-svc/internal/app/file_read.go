package app

import (
	"context"
	"fmt"
	"io"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"

	"rentalplatform/collections-svc/internal/domain"
)

// ListFiles returns one page of the files of the caller's case, newest first.
func (s *Service) ListFiles(ctx context.Context, caller Caller, caseID string, p listing.Params) ([]*domain.File, bool, error) {
	if _, err := s.GetCase(ctx, caller, caseID); err != nil {
		return nil, false, err
	}
	return s.Files.List(ctx, caseID, caller.Account, caller.Livemode, p)
}

// FileContent returns the record of the caller's file on the case and a reader of its bytes,
// which the caller closes; ctx bounds the whole read.
func (s *Service) FileContent(ctx context.Context, caller Caller, caseID, fileID string) (*domain.File, io.ReadCloser, error) {
	if !validCaseID(caseID) {
		return nil, nil, domain.CaseNotFound(caseID)
	}
	if !ids.Valid(ids.File, fileID) {
		return nil, nil, domain.FileNotFound(fileID)
	}
	f, err := s.Files.Get(ctx, fileID, caseID, caller.Account, caller.Livemode)
	if err != nil {
		return nil, nil, err
	}
	r, n, err := s.Contents.Open(ctx, fileID)
	if err != nil {
		return nil, nil, err
	}
	// The answer's Content-Length is the record's size: stored bytes of another length would
	// make a response that breaks off or overruns, so that is an error of the store, not a
	// download.
	if n != f.Size() {
		_ = r.Close()
		return nil, nil, fmt.Errorf("file %s: the stored content is %d bytes, its record says %d", fileID, n, f.Size())
	}
	return f, r, nil
}
