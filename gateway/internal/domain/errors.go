package domain

import (
	"errors"
	"fmt"
)

// ErrorKind says what went wrong in terms the edge can map to a status once.
type ErrorKind int

// Error kinds.
const (
	// KindInvalid: a parameter's value breaks a rule (400).
	KindInvalid ErrorKind = iota + 1
	// KindNotFound: the object addressed by the request does not exist (404).
	KindNotFound
	// KindReferenceMissing: a parameter names an object that does not exist (400).
	KindReferenceMissing
	// KindConflict: the object already exists (409).
	KindConflict
	// KindInvalidState: the object's state refuses the request (409).
	KindInvalidState
	// KindIdempotencyInUse: a request with the same idempotency key is still running (409).
	KindIdempotencyInUse
	// KindIdempotencyReused: the idempotency key belongs to a different request (400).
	KindIdempotencyReused
)

// Error is a domain error. Param names the offending parameter, if any; Message is safe to
// show the caller.
type Error struct {
	Kind    ErrorKind
	Param   string
	Message string
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (param %s)", e.Message, e.Param)
	}
	return e.Message
}

// KindOf returns the kind of the domain error inside err, or 0 when there is none.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func invalid(param, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

func invalidState(format string, args ...any) *Error {
	return &Error{Kind: KindInvalidState, Message: fmt.Sprintf(format, args...)}
}

// KeyNotRollable is the error of a roll that lost a race with a revoke or another roll.
func KeyNotRollable(id string) *Error {
	return invalidState("The API key %s was revoked or rolled meanwhile and cannot be rolled.", id)
}

// KeyNotFound is the error for a key id that does not exist.
func KeyNotFound(id string) *Error {
	return &Error{Kind: KindNotFound, Param: "id", Message: fmt.Sprintf("No such api_key: '%s'", id)}
}

// KeyReferenceMissing is the error for a parameter (a list cursor) naming a key that does
// not exist where the caller looked.
func KeyReferenceMissing(param, id string) *Error {
	return &Error{Kind: KindReferenceMissing, Param: param, Message: fmt.Sprintf("No such api_key: '%s'", id)}
}

// ErrKeyExists is the error for storing a key whose id or secret is already stored.
var ErrKeyExists = &Error{Kind: KindConflict, Param: "secret", Message: "An API key with this secret already exists."}
