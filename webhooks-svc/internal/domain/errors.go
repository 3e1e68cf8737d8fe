package domain

import (
	"errors"
	"fmt"

	"rentalplatform/libs/apierr"
)

// Kind says how an operation failed, so the edge can answer with the right status without
// knowing each rule.
type Kind int

// Error kinds.
const (
	// KindInvalid: the input breaks a rule; nothing was changed.
	KindInvalid Kind = iota + 1
	// KindNotFound: no such object for this account and mode.
	KindNotFound
	// KindConflict: the object changed under the request too often to apply it; retrying
	// the request is safe.
	KindConflict
	// KindState: the object's state refuses the operation.
	KindState
)

// Codes the public API promises (the stable codes of libs/apierr) plus this service's own.
const (
	CodeParameterMissing = apierr.CodeParameterMissing
	CodeParameterInvalid = apierr.CodeParameterInvalid
	CodeURLNotHTTPS      = apierr.CodeURLNotHTTPS
	CodeResourceMissing  = apierr.CodeResourceMissing
	CodeInvalidState     = apierr.CodeInvalidState
	// CodeURLNotAllowed: the URL points at a private, loopback or otherwise internal address.
	CodeURLNotAllowed = "url_not_allowed"
	// CodeLockTimeout: concurrent writes to one endpoint kept winning the race.
	CodeLockTimeout = "lock_timeout"
)

// Error is a domain error: what went wrong (Kind), the stable code the API reports, the
// offending parameter by its dotted path, and a message safe to show the client.
type Error struct {
	Kind    Kind
	Code    string
	Param   string
	Message string
	// Object names the kind of object a KindNotFound error is about ("webhook_endpoint").
	Object string
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (param %s): %s", e.Code, e.Param, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, ErrNotFound) match any not-found error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && (t.Code == "" || t.Code == e.Code)
}

// ErrNotFound is returned for an endpoint that does not exist for the caller's account and
// mode, whether it never existed, was deleted, or belongs to someone else.
var ErrNotFound = &Error{Kind: KindNotFound, Code: CodeResourceMissing, Message: "No such webhook endpoint.",
	Object: "webhook_endpoint"}

// ErrEventNotFound is returned for an event that does not exist for the caller's account and
// mode (or was purged after the retention period).
var ErrEventNotFound = &Error{Kind: KindNotFound, Code: CodeResourceMissing, Message: "No such event.", Object: "event"}

// ErrDeliveryNotFound is returned for a webhook delivery that does not exist for the caller's
// account and mode.
var ErrDeliveryNotFound = &Error{Kind: KindNotFound, Code: CodeResourceMissing, Message: "No such webhook delivery.",
	Object: "webhook_delivery"}

// ErrEndpointDisabled refuses to retry a delivery to a disabled endpoint, which would not be
// attempted.
var ErrEndpointDisabled = &Error{Kind: KindState, Code: CodeInvalidState,
	Message: "The delivery's webhook endpoint is disabled; enable it to retry its deliveries."}

// ErrEndpointGone refuses to retry a delivery whose endpoint was deleted.
var ErrEndpointGone = &Error{Kind: KindState, Code: CodeInvalidState,
	Message: "The delivery's webhook endpoint was deleted."}

// URLNotAllowed refuses a URL that points inside the platform's network.
func URLNotAllowed(reason string) *Error {
	return invalid(CodeURLNotAllowed, "url",
		"Invalid url: webhook endpoints must be reachable on the public internet (%s).", reason)
}

// Invalid returns a KindInvalid error naming param.
func Invalid(code, param, format string, args ...any) *Error {
	return invalid(code, param, format, args...)
}

// ErrConflict is returned when an update lost the optimistic-concurrency race every time it
// was retried.
var ErrConflict = &Error{Kind: KindConflict, Code: CodeLockTimeout,
	Message: "The webhook endpoint was being changed by another request; retry the request."}

func invalid(code, param, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

func missing(param string) *Error {
	return invalid(CodeParameterMissing, param, "Missing required param: %s.", param)
}

// AsError returns the *Error inside err, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
