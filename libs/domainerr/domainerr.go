// Package domainerr is the error every service's domain and use cases return when a request
// cannot be carried out: what kind of failure it is, the stable code the API reports, the
// dotted parameter at fault, and a message safe to show the caller. It imports nothing of
// HTTP: libs/apierr maps a Kind to a status and an envelope, once, for every service.
package domainerr

import (
	"errors"
	"fmt"
)

// Kind says how an operation failed, so the edge answers with the right status without
// knowing each rule.
type Kind int

// Error kinds.
const (
	// Invalid: the input breaks a rule; nothing was changed (400).
	Invalid Kind = iota + 1
	// NotFound: the object the request addresses does not exist for this account and mode (404).
	NotFound
	// Conflict: the object's current state, or a concurrent request, refuses the operation (409).
	Conflict
	// IdempotencyInUse: a request with the same idempotency key is still running (409).
	IdempotencyInUse
	// IdempotencyReused: the idempotency key belongs to a different request (400).
	IdempotencyReused
	// TooLarge: an uploaded file is larger than the operation accepts (413).
	TooLarge
	// UnsupportedMedia: an uploaded file's content is of a type the operation does not accept
	// (415).
	UnsupportedMedia
)

// Stable codes shared by every service. A service adds its own next to its rules.
const (
	CodeParameterMissing = "parameter_missing"
	CodeParameterInvalid = "parameter_invalid"
	CodeParameterUnknown = "parameter_unknown"
	// CodeParameterDuplicate: a parameter given twice (a repeated JSON key, a repeated scalar
	// query parameter), which two readers of one request could take differently.
	CodeParameterDuplicate = "parameter_duplicate"
	// CodeParametersExclusive: two parameters that cannot be used together (starting_after and
	// ending_before).
	CodeParametersExclusive = "parameters_exclusive"
	CodeResourceMissing     = "resource_missing"
	CodeInvalidState        = "invalid_state"
	CodeURLNotHTTPS         = "url_not_https"
	// CodeURLCredentials: a URL with a user name or password (https://user:pass@host), which
	// would be stored and shown in every read of the object.
	CodeURLCredentials = "url_credentials_not_allowed"

	// CodeLockTimeout: concurrent changes of one object kept winning the race; a retry
	// resolves it.
	CodeLockTimeout = "lock_timeout"

	CodeIdempotencyKeyInUse  = "idempotency_key_in_use"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
)

// Error is a domain error.
type Error struct {
	Kind    Kind
	Code    string // stable, clients branch on it
	Param   string // dotted path of the offending parameter ("address.country", "metadata[plan]"), if any
	Message string // safe to show the caller
	// Object names the type of object a NotFound error is about ("webhook_endpoint"), so a
	// sentinel can match every not-found error of one type whatever the id.
	Object string
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (param %s): %s", e.Code, e.Param, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, sentinel) match by kind, and by the sentinel's code and object when it
// sets them: errors.Is(EndpointNotFound("we_1"), ErrEndpointNotFound) holds.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && (t.Code == "" || t.Code == e.Code) && (t.Object == "" || t.Object == e.Object)
}

// New returns an error of any kind and code.
func New(kind Kind, code, param, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// InvalidParam returns an Invalid error with code parameter_invalid naming param.
func InvalidParam(param, format string, args ...any) *Error {
	return New(Invalid, CodeParameterInvalid, param, format, args...)
}

// Missing returns the error for a required parameter that was not given.
func Missing(param string) *Error {
	return New(Invalid, CodeParameterMissing, param, "Missing required param: %s.", param)
}

// Unknown returns the error for a parameter the operation does not take.
func Unknown(param string) *Error {
	return New(Invalid, CodeParameterUnknown, param, "Received unknown parameter: %s.", param)
}

// NotFoundObject returns the error for an object id that does not exist for the caller: the
// message names the object type and the id, the parameter is "id".
func NotFoundObject(object, id string) *Error {
	return &Error{Kind: NotFound, Code: CodeResourceMissing, Param: "id", Object: object,
		Message: fmt.Sprintf("No such %s: '%s'", object, id)}
}

// NotFoundSentinel returns a value that matches, with errors.Is, every NotFoundObject error of
// object, whatever the id.
func NotFoundSentinel(object string) *Error {
	return &Error{Kind: NotFound, Code: CodeResourceMissing, Object: object, Message: fmt.Sprintf("No such %s.", object)}
}

// LockTimeout is the error of a change of an object (a "webhook endpoint") that kept losing the
// race against concurrent changes of it until its retries ran out (docstore's optimistic
// updates): 409 lock_timeout, and the request changed nothing.
func LockTimeout(object string) *Error {
	return &Error{Kind: Conflict, Code: CodeLockTimeout, Object: object,
		Message: fmt.Sprintf("The %s was being changed by other requests at the same time; retry the request.", object)}
}

// ErrLockTimeout matches, with errors.Is, every LockTimeout error; it is also the error of a
// change of an object that has no name.
var ErrLockTimeout = &Error{Kind: Conflict, Code: CodeLockTimeout,
	Message: "The object was being changed by other requests at the same time; retry the request."}

// InvalidState returns the error of an object whose state refuses the operation: a 400, as
// the API description answers cancelling a completed verification session, and as every
// service answers it (a 409 is for conflicts a retry can resolve: a lock, a running attempt).
func InvalidState(format string, args ...any) *Error {
	return New(Invalid, CodeInvalidState, "", format, args...)
}

// As returns the *Error inside err, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// KindOf returns the kind of the *Error inside err, or 0 when there is none.
func KindOf(err error) Kind {
	if e := As(err); e != nil {
		return e.Kind
	}
	return 0
}

// CodeOf returns the code of the *Error inside err, or "" when there is none.
func CodeOf(err error) string {
	if e := As(err); e != nil {
		return e.Code
	}
	return ""
}
