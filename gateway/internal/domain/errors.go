package domain

import "rentalplatform/libs/domainerr"

// codeResourceExists is the code of storing a key whose id or secret is already stored.
const codeResourceExists = "resource_already_exists"

func invalid(param, format string, args ...any) *domainerr.Error {
	return domainerr.InvalidParam(param, format, args...)
}

func invalidState(format string, args ...any) *domainerr.Error {
	return domainerr.InvalidState(format, args...)
}

// KeyNotRollable is the error of a roll that lost a race with a revoke or another roll.
func KeyNotRollable(id string) *domainerr.Error {
	return invalidState("The API key %s was revoked or rolled meanwhile and cannot be rolled.", id)
}

// KeyNotFound is the error for a key id that does not exist.
func KeyNotFound(id string) *domainerr.Error {
	return domainerr.NotFoundObject("api_key", id)
}

// KeyReferenceMissing is the error for a parameter (a list cursor) naming a key that does
// not exist where the caller looked: a 400, since the request, not the URL, names it.
func KeyReferenceMissing(param, id string) *domainerr.Error {
	return domainerr.New(domainerr.Invalid, domainerr.CodeResourceMissing, param, "No such api_key: '%s'", id)
}

// ErrKeyExists is the error for storing a key whose id or secret is already stored.
var ErrKeyExists = domainerr.New(domainerr.Conflict, codeResourceExists, "secret", "An API key with this secret already exists.")
