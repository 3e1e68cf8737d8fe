package domain

import (
	"fmt"
	"time"
)

// AttemptErrorCode is the stable category of why a delivery attempt failed, shown to the API
// caller with a message written for them (Attempt.Message). The sender's own error is never
// shown: it names the platform's DNS resolver and the address a name resolved to, which would
// let endpoints map the platform's internal network. It goes to the service's log instead.
type AttemptErrorCode string

// Attempt error codes (docs/api.md lists them with their messages).
const (
	// AttemptDNSResolutionFailed: the endpoint's host name did not resolve.
	AttemptDNSResolutionFailed AttemptErrorCode = "dns_resolution_failed"
	// AttemptConnectionRefused: nothing accepted the connection.
	AttemptConnectionRefused AttemptErrorCode = "connection_refused"
	// AttemptConnectionTimeout: no connection within the attempt's time limit.
	AttemptConnectionTimeout AttemptErrorCode = "connection_timeout"
	// AttemptAddressNotAllowed: the name resolved to an internal address, which the guard
	// refuses (SSRF).
	AttemptAddressNotAllowed AttemptErrorCode = "address_not_allowed"
	// AttemptTLSHandshakeFailed: connected, but no TLS session came of it.
	AttemptTLSHandshakeFailed AttemptErrorCode = "tls_handshake_failed"
	// AttemptTLSCertificateInvalid: the server's certificate was not accepted.
	AttemptTLSCertificateInvalid AttemptErrorCode = "tls_certificate_invalid"
	// AttemptResponseTimeout: the request was sent and no response came in time.
	AttemptResponseTimeout AttemptErrorCode = "response_timeout"
	// AttemptHTTPStatus: a response that is not 2xx (a redirect included).
	AttemptHTTPStatus AttemptErrorCode = "http_status"
	// AttemptConnectionFailed: no response for any other reason (the connection was closed
	// or reset, the response was malformed). Also what attempts recorded before attempts had
	// a code are shown with when they got no response.
	AttemptConnectionFailed AttemptErrorCode = "connection_failed"
)

// Valid reports whether c is one of the codes above.
func (c AttemptErrorCode) Valid() bool {
	switch c {
	case AttemptDNSResolutionFailed, AttemptConnectionRefused, AttemptConnectionTimeout,
		AttemptAddressNotAllowed, AttemptTLSHandshakeFailed, AttemptTLSCertificateInvalid,
		AttemptResponseTimeout, AttemptHTTPStatus, AttemptConnectionFailed:
		return true
	}
	return false
}

// Attempt is one try at delivering.
type Attempt struct {
	At       time.Time
	Duration time.Duration
	// Status is the HTTP status received; 0 when none was (ErrorCode says why).
	Status int
	// ErrorCode is why the attempt failed; "" when it succeeded (a 2xx).
	ErrorCode AttemptErrorCode
}

// Message is the attempt's failure as the API caller reads it ("" when it succeeded). It is
// fixed text per code (and the HTTP status for http_status): nothing the network said, not
// even the host name, reaches it, so no resolver, resolved address or port can.
func (a Attempt) Message() string {
	switch a.ErrorCode {
	case "":
		return ""
	case AttemptDNSResolutionFailed:
		return "The endpoint's host name could not be resolved to an address. Check that the domain exists and has DNS records (A or AAAA) for that name."
	case AttemptConnectionRefused:
		return "The endpoint's server refused the connection: nothing accepted connections on the URL's port."
	case AttemptConnectionTimeout:
		return "The endpoint's server could not be reached: no connection was established within the attempt's time limit."
	case AttemptAddressNotAllowed:
		return "The endpoint's host name resolves to a private, loopback or otherwise internal address. Webhooks are only delivered to public addresses."
	case AttemptTLSHandshakeFailed:
		return "The TLS handshake with the endpoint's server failed: it did not speak TLS on the URL's port, did not complete the handshake in time, or shared no protocol version or cipher suite with us (TLS 1.2 or later is required)."
	case AttemptTLSCertificateInvalid:
		return "The endpoint's TLS certificate was not accepted: it is expired or not yet valid, not issued by a trusted certificate authority (a self-signed certificate, for example), or not valid for the endpoint's host name."
	case AttemptResponseTimeout:
		return "The endpoint accepted the request but did not answer within the attempt's time limit."
	case AttemptHTTPStatus:
		if a.Status >= 300 && a.Status < 400 {
			return fmt.Sprintf("The endpoint answered with a redirect (HTTP status %d). Redirects are not followed; only a 2xx status counts as a successful delivery.", a.Status)
		}
		return fmt.Sprintf("The endpoint answered with HTTP status %d; only a 2xx status counts as a successful delivery.", a.Status)
	default:
		return "The connection to the endpoint's server failed before a complete response was received (it was closed or reset, for example)."
	}
}

// Result is what one attempt met, as the sender reports it.
type Result struct {
	At       time.Time
	Duration time.Duration
	Status   int // 0: no response
	// ErrorCode is why there was no response (Status 0), as the sender classified it. A
	// response that is not 2xx is http_status whatever this says.
	ErrorCode AttemptErrorCode
	// Cause is the sender's own error when there was no response, for the service's log
	// only: it may name the platform's resolver and the internal address a name resolved to,
	// so it is neither stored nor shown.
	Cause error
	// RetryAfter is the receiver's Retry-After, when it sent one.
	RetryAfter *time.Duration
}

// Attempt is the attempt r records.
func (r Result) Attempt() Attempt {
	return Attempt{At: r.At.UTC(), Duration: r.Duration, Status: r.Status, ErrorCode: attemptCode(r.Status, r.ErrorCode)}
}

// Succeeded reports whether the attempt got a 2xx.
func (r Result) Succeeded() bool { return r.Status >= 200 && r.Status < 300 }

// attemptCode is the code of an attempt that got status (0: none) and, without a response,
// was classified as transport (which may be "" or unknown).
func attemptCode(status int, transport AttemptErrorCode) AttemptErrorCode {
	switch {
	case status >= 200 && status < 300:
		return ""
	case status != 0:
		return AttemptHTTPStatus
	case transport.Valid() && transport != AttemptHTTPStatus:
		return transport
	default:
		return AttemptConnectionFailed
	}
}

// rehydrated is a stored attempt as the domain sees it. Attempts recorded before attempts had
// a code were stored with the sender's own error text, which may name internal addresses: the
// repository does not read it, and such an attempt is known by its status alone (http_status,
// or connection_failed when it got no response).
func (a Attempt) rehydrated() Attempt {
	a.ErrorCode = attemptCode(a.Status, a.ErrorCode)
	return a
}
