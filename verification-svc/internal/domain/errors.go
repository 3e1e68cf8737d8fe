package domain

import (
	"rentalplatform/libs/domainerr"
)

// Codes the API promises (the shared ones of libs/domainerr) plus this service's own.
const (
	CodeParameterMissing = domainerr.CodeParameterMissing
	CodeParameterInvalid = domainerr.CodeParameterInvalid
	CodeInvalidState     = domainerr.CodeInvalidState
	// CodeURLNotAllowed: a webhook_url on a private, loopback or otherwise internal address
	// (the same refusal as a webhook endpoint's url).
	CodeURLNotAllowed = "url_not_allowed"
)

// Object types as the API names them.
const (
	ObjectSession = "verification_session"
	ObjectReport  = "verification_report"
)

// Not-found sentinels: errors.Is(err, ErrSessionNotFound) matches SessionNotFound of any id. A
// session that never existed and one of another account or mode are not found alike.
var (
	ErrSessionNotFound = domainerr.NotFoundSentinel(ObjectSession)
	ErrReportNotFound  = domainerr.NotFoundSentinel(ObjectReport)
)

// SessionNotFound is the error for a session id the caller does not have.
func SessionNotFound(id string) error { return domainerr.NotFoundObject(ObjectSession, id) }

// ReportNotFound is the error for a report id the caller does not have.
func ReportNotFound(id string) error { return domainerr.NotFoundObject(ObjectReport, id) }

// URLNotAllowed refuses a webhook_url that points inside the platform's network.
func URLNotAllowed(param, host string) error {
	return domainerr.New(domainerr.Invalid, CodeURLNotAllowed, param,
		"Invalid %s: webhooks are only delivered to the public internet (%s is a private, loopback or otherwise internal address).", param, host)
}

func invalid(param, format string, args ...any) error {
	return domainerr.InvalidParam(param, format, args...)
}
