package domain

import (
	"rentalplatform/libs/domainerr"
)

// Codes the API promises beyond the shared ones of libs/domainerr.
const (
	// CodeAgreementNotActive: a payment request names a cancelled agreement.
	CodeAgreementNotActive = "agreement_not_active"
	// CodeProcessorNotConfigured: live mode has no payment processor to charge through.
	CodeProcessorNotConfigured = "processor_not_configured"
	// CodeAttemptInProgress: an attempt is charging the request and did not finish within the
	// time a cancel waits for it.
	CodeAttemptInProgress = "attempt_in_progress"
)

// Object types as the API names them.
const (
	ObjectAgreement = "payment_agreement"
	ObjectMethod    = "payment_method"
	ObjectRequest   = "payment_request"
	ObjectCharge    = "charge"
)

// Not-found sentinels: errors.Is(err, ErrAgreementNotFound) matches AgreementNotFound of any id.
var (
	ErrAgreementNotFound = domainerr.NotFoundSentinel(ObjectAgreement)
	ErrRequestNotFound   = domainerr.NotFoundSentinel(ObjectRequest)
)

// AgreementNotFound is the error for an agreement id the caller does not have.
func AgreementNotFound(id string) error { return domainerr.NotFoundObject(ObjectAgreement, id) }

// RequestNotFound is the error for a payment request id the caller does not have.
func RequestNotFound(id string) error { return domainerr.NotFoundObject(ObjectRequest, id) }

// ErrAttemptInProgress refuses a cancel while a collection attempt is charging the request (the
// attempt decides the outcome; a cancel then would race the charge).
var ErrAttemptInProgress = domainerr.New(domainerr.Conflict, CodeAttemptInProgress, "",
	"A collection attempt is charging this payment request right now; retry the cancel in a few seconds.")

func invalid(param, format string, args ...any) error {
	return domainerr.InvalidParam(param, format, args...)
}
