package domain

import (
	"rentalplatform/libs/domainerr"
)

// Codes the API promises beyond the shared ones of libs/domainerr.
const (
	// CodeFileTooLarge: an uploaded file is larger than MaxFileSize (413).
	CodeFileTooLarge = "file_too_large"
	// CodeFileTypeUnsupported: an uploaded file's content is none of the accepted types (415).
	CodeFileTypeUnsupported = "file_type_unsupported"
	// CodePaymentTooLarge: a debt payment above the case's remainder.
	CodePaymentTooLarge = "amount_exceeds_remainder"
	// CodePaymentLimit: a case holds MaxPayments payments already.
	CodePaymentLimit = "payment_limit_reached"
)

// Object types as the API names them.
const (
	ObjectCase    = "collection_case"
	ObjectFile    = "case_file"
	ObjectPayment = "debt_payment"
)

// Not-found sentinels: errors.Is(err, ErrCaseNotFound) matches CaseNotFound of any id. A case
// that never existed and one of another account or mode are not found alike.
var (
	ErrCaseNotFound = domainerr.NotFoundSentinel(ObjectCase)
	ErrFileNotFound = domainerr.NotFoundSentinel(ObjectFile)
)

// CaseNotFound is the error for a case id the caller does not have.
func CaseNotFound(id string) error { return domainerr.NotFoundObject(ObjectCase, id) }

// ReferenceNotFound is the error for a reference that names none of the caller's cases.
func ReferenceNotFound(ref string) error {
	e := domainerr.NotFoundObject(ObjectCase, ref)
	e.Param = "reference"
	e.Message = "No such collection_case with reference '" + ref + "'"
	return e
}

// FileNotFound is the error for a file id the caller does not have on that case.
func FileNotFound(id string) error {
	e := domainerr.NotFoundObject(ObjectFile, id)
	e.Param = "file_id"
	return e
}

func invalid(param, format string, args ...any) error {
	return domainerr.InvalidParam(param, format, args...)
}
