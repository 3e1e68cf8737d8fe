package domain

import (
	"rentalplatform/libs/domainerr"
)

// Codes the public API promises (the shared codes of libs/domainerr) plus this service's own.
const (
	CodeParameterMissing = domainerr.CodeParameterMissing
	CodeParameterInvalid = domainerr.CodeParameterInvalid
	CodeURLNotHTTPS      = domainerr.CodeURLNotHTTPS
	CodeInvalidState     = domainerr.CodeInvalidState
	// CodeURLNotAllowed: the URL points at a private, loopback or otherwise internal address.
	CodeURLNotAllowed = "url_not_allowed"
)

// Object types as the API names them.
const (
	ObjectEndpoint = "webhook_endpoint"
	ObjectEvent    = "event"
	ObjectDelivery = "webhook_delivery"
)

// Not-found sentinels: errors.Is(err, ErrNotFound) matches EndpointNotFound of any id, and so on.
// An object that never existed, was deleted, or belongs to another account or mode is not
// found alike.
var (
	ErrNotFound         = domainerr.NotFoundSentinel(ObjectEndpoint)
	ErrEventNotFound    = domainerr.NotFoundSentinel(ObjectEvent)
	ErrDeliveryNotFound = domainerr.NotFoundSentinel(ObjectDelivery)
)

// EndpointNotFound is the error for an endpoint id the caller does not have.
func EndpointNotFound(id string) error { return domainerr.NotFoundObject(ObjectEndpoint, id) }

// EventNotFound is the error for an event id the caller does not have (or one purged after the
// retention period).
func EventNotFound(id string) error { return domainerr.NotFoundObject(ObjectEvent, id) }

// DeliveryNotFound is the error for a delivery id the caller does not have.
func DeliveryNotFound(id string) error { return domainerr.NotFoundObject(ObjectDelivery, id) }

// ErrEndpointDisabled refuses to retry a delivery to a disabled endpoint, which would not be
// attempted.
var ErrEndpointDisabled = domainerr.InvalidState("The delivery's webhook endpoint is disabled; enable it to retry its deliveries.")

// ErrEndpointGone refuses to retry a delivery whose endpoint was deleted.
var ErrEndpointGone = domainerr.InvalidState("The delivery's webhook endpoint was deleted.")

// URLNotAllowed refuses a URL that points inside the platform's network.
func URLNotAllowed(reason string) error {
	return invalid(CodeURLNotAllowed, "url",
		"Invalid url: webhook endpoints must be reachable on the public internet (%s).", reason)
}

// Invalid returns an Invalid error naming param.
func Invalid(code, param, format string, args ...any) error {
	return invalid(code, param, format, args...)
}

func invalid(code, param, format string, args ...any) error {
	return domainerr.New(domainerr.Invalid, code, param, format, args...)
}

func missing(param string) error { return domainerr.Missing(param) }
