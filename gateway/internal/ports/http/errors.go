package http

import (
	"errors"
	"fmt"
	"net/http"

	"rentalplatform/gateway/internal/adapters/upstream"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/apierr"
)

// Codes the gateway uses that libs/apierr does not name.
const (
	codeBodyUnreadable  = "body_unreadable"
	codeContentEncoding = "content_encoding_unsupported"
)

// fromUpstream maps a failed call to a service. The service's name is not shown to the
// client; the log line the caller writes has it.
func fromUpstream(err error) *apierr.Error {
	switch {
	case errors.Is(err, upstream.ErrTimeout):
		return apierr.New(http.StatusGatewayTimeout, apierr.API, apierr.CodeUpstreamTimeout,
			"The service handling this request did not answer in time. The request may or may not have been applied; retry it with the same Idempotency-Key.")
	case errors.Is(err, upstream.ErrOverloaded):
		return apierr.New(http.StatusServiceUnavailable, apierr.API, apierr.CodeServiceUnavailable,
			"The service handling this request is overloaded. Retry the request after a short wait.")
	case errors.Is(err, upstream.ErrBadResponse):
		return apierr.New(http.StatusBadGateway, apierr.API, apierr.CodeUpstreamBadResponse,
			"The service handling this request gave an invalid answer. Retry the request; if it keeps failing, contact support with the request id.")
	default:
		return apierr.New(http.StatusBadGateway, apierr.API, apierr.CodeUpstreamUnavailable,
			"The service handling this request is unavailable. Retry the request after a short wait.")
	}
}

// keyStoreUnavailable is the answer when the key store cannot be asked: the key may well be
// valid, so 401 would be a lie.
func keyStoreUnavailable() *apierr.Error {
	return apierr.New(http.StatusServiceUnavailable, apierr.API, apierr.CodeServiceUnavailable,
		"Authentication is temporarily unavailable. Retry the request after a short wait.")
}

// codePermissionDenied is the code of a restricted key's 403.
const codePermissionDenied = "permission_denied"

// permissionDenied is the answer to a restricted key acting beyond its permissions. It names
// the resource and what the key would need.
func permissionDenied(k domain.Key, r domain.Resource, write bool) *apierr.Error {
	need := domain.AccessRead
	if write {
		need = domain.AccessWrite
	}
	return apierr.New(http.StatusForbidden, apierr.Permission, codePermissionDenied,
		fmt.Sprintf("The restricted key %s does not have %s access to %s (it has '%s'). Grant '%s' on %s to allow this request.",
			k.ID(), need, r, k.Permissions().Of(r), need, r))
}

func bodyTooLarge(limit int) *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.InvalidRequest, apierr.CodeBodyTooLarge,
		fmt.Sprintf("The request body is larger than the limit of %d bytes for this route.", limit))
}

func routeMissing(method, path string) *apierr.Error {
	return apierr.New(http.StatusNotFound, apierr.InvalidRequest, apierr.CodeRouteMissing,
		fmt.Sprintf("Unrecognized request URL (%s: %s).", method, path))
}

func methodNotAllowed(method, path string) *apierr.Error {
	return apierr.New(http.StatusMethodNotAllowed, apierr.InvalidRequest, apierr.CodeMethodNotAllowed,
		fmt.Sprintf("Method %s is not allowed on %s; use GET, POST or DELETE.", method, path))
}
