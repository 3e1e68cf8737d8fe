// Package apierr is the platform's error model: the error types and stable codes of the public
// API, their HTTP statuses, and the JSON envelope every non-2xx response carries. It is also the
// one place a domain error's kind (libs/domainerr) becomes a status and an envelope type.
package apierr

import (
	"errors"
	"fmt"
	"net/http"

	"rentalplatform/libs/domainerr"
)

// Type is the broad class of an error, the envelope's "type".
type Type string

// Error types of the public API.
const (
	InvalidRequest Type = "invalid_request_error"
	Authentication Type = "authentication_error"
	Permission     Type = "permission_error"
	RateLimit      Type = "rate_limit_error"
	Idempotency    Type = "idempotency_error"
	API            Type = "api_error"
)

// Stable error codes. Clients branch on these, so they never change meaning.
const (
	CodeParameterMissing     = domainerr.CodeParameterMissing
	CodeParameterInvalid     = domainerr.CodeParameterInvalid
	CodeParameterUnknown     = domainerr.CodeParameterUnknown
	CodeParameterDuplicate   = domainerr.CodeParameterDuplicate
	CodeParametersExclusive  = domainerr.CodeParametersExclusive
	CodeResourceMissing      = domainerr.CodeResourceMissing
	CodeInvalidState         = domainerr.CodeInvalidState
	CodeURLNotHTTPS          = domainerr.CodeURLNotHTTPS
	CodeURLCredentials       = domainerr.CodeURLCredentials
	CodeBodyInvalidJSON      = "body_invalid_json"
	CodeBodyTooLarge         = "body_too_large"
	CodeUnsupportedMedia     = "unsupported_media_type"
	CodeRouteMissing         = "route_missing"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeAPIKeyInvalid        = "api_key_invalid"
	CodeIdentityInvalid      = "internal_identity_invalid"
	CodeUpstreamUnavailable  = "upstream_unavailable"
	CodeUpstreamTimeout      = "upstream_timeout"
	CodeUpstreamBadResponse  = "upstream_bad_response"
	CodeInternal             = "internal_error"
	CodeServiceUnavailable   = "service_unavailable"
	CodeAdminTokenInvalid    = "admin_token_invalid"
	CodeRateLimited          = "rate_limited"
	CodeIdempotencyKeyReused = domainerr.CodeIdempotencyKeyReused
	CodeIdempotencyKeyInUse  = domainerr.CodeIdempotencyKeyInUse
)

// Error is an API error. It is an ordinary Go error so it can travel up through wrapping; the
// HTTP edge finds it with errors.As and renders it once.
type Error struct {
	Status  int    // HTTP status
	Type    Type   // envelope "type"
	Code    string // envelope "code"
	Message string // human-readable, safe to show the client
	Param   string // dotted path of the offending parameter, if any
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (%s, param %s): %s", e.Code, e.Type, e.Param, e.Message)
	}
	return fmt.Sprintf("%s (%s): %s", e.Code, e.Type, e.Message)
}

// Invalid is a 400 invalid_request_error naming param.
func Invalid(code, param, message string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: InvalidRequest, Code: code, Param: param, Message: message}
}

// Missing is a 400 for a required parameter that was not given.
func Missing(param string) *Error {
	return Invalid(CodeParameterMissing, param, fmt.Sprintf("Missing required param: %s.", param))
}

// Unknown is a 400 for a parameter the operation does not take.
func Unknown(param string) *Error {
	return Invalid(CodeParameterUnknown, param, fmt.Sprintf("Received unknown parameter: %s.", param))
}

// NotFound is a 404 for an object that does not exist for this account and mode.
func NotFound(object, id string) *Error {
	return &Error{Status: http.StatusNotFound, Type: InvalidRequest, Code: CodeResourceMissing, Param: "id",
		Message: fmt.Sprintf("No such %s: '%s'", object, id)}
}

// Conflict is a 409 for a request the object's current state refuses.
func Conflict(code, message string) *Error {
	return &Error{Status: http.StatusConflict, Type: InvalidRequest, Code: code, Message: message}
}

// Unauthenticated is the single 401 the gateway gives for every bad API key, so a caller learns
// nothing about which check failed.
func Unauthenticated() *Error {
	return &Error{Status: http.StatusUnauthorized, Type: Authentication, Code: CodeAPIKeyInvalid,
		Message: "Invalid API key provided. Send a secret key as 'Authorization: Bearer sk_test_...' or 'Bearer sk_live_...'."}
}

// Internal is a 500 whose message reveals nothing about the cause; the cause is logged.
func Internal() *Error {
	return &Error{Status: http.StatusInternalServerError, Type: API, Code: CodeInternal,
		Message: "An internal error occurred. Retry the request; if it keeps failing, contact support with the request id."}
}

// New builds an error of any status, type and code.
func New(status int, typ Type, code, message string) *Error {
	return &Error{Status: status, Type: typ, Code: code, Message: message}
}

// From returns the API error err stands for: the *Error inside it, or the mapping of the
// *domainerr.Error inside it, or nil when it holds neither (an internal error).
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if de := domainerr.As(err); de != nil {
		return fromDomain(de)
	}
	return nil
}

// fromDomain maps a domain error's kind to its status and envelope type: the only such mapping.
// An unknown kind is an internal error.
func fromDomain(de *domainerr.Error) *Error {
	e := &Error{Type: InvalidRequest, Code: de.Code, Param: de.Param, Message: de.Message}
	switch de.Kind {
	case domainerr.Invalid:
		e.Status = http.StatusBadRequest
	case domainerr.NotFound:
		e.Status = http.StatusNotFound
	case domainerr.Conflict:
		e.Status = http.StatusConflict
	case domainerr.IdempotencyInUse:
		e.Status, e.Type = http.StatusConflict, Idempotency
	case domainerr.IdempotencyReused:
		e.Status, e.Type = http.StatusBadRequest, Idempotency
	case domainerr.TooLarge:
		e.Status = http.StatusRequestEntityTooLarge
	case domainerr.UnsupportedMedia:
		e.Status = http.StatusUnsupportedMediaType
	default:
		return nil
	}
	return e
}

// Envelope is the JSON body of every error response.
type Envelope struct {
	Error Body `json:"error"`
}

// Body is the envelope's inner object. Param is omitted when empty.
type Body struct {
	Type      Type   `json:"type"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Param     string `json:"param,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// Envelope renders e for the request with the given id.
func (e *Error) Envelope(requestID string) Envelope {
	return Envelope{Error: Body{Type: e.Type, Code: e.Code, Message: e.Message, Param: e.Param, RequestID: requestID}}
}
