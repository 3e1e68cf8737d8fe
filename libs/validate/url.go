package validate

import (
	"net/url"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

// HTTPSURL checks that s is an absolute https:// URL with a host, of at most maxLen
// characters (each caller passes its own field's limit). A URL with any other scheme, or none,
// is refused with code url_not_https; one with a user name or password
// (https://user:pass@host, or just user@) with url_credentials_not_allowed, because the URL
// is stored and shown in every read of its object; one too long, unparseable, or without a
// host with parameter_invalid. The scheme is matched in any case ("HTTPS://" passes). The host is not
// resolved or checked against private ranges: that is the caller's business when it
// connects.
func HTTPSURL(param, s string, maxLen int) error {
	if s == "" {
		return empty(param)
	}
	if n := utf8.RuneCountInString(s); n > maxLen {
		return invalid(param, "Invalid %s: must be at most %d characters, got %d.", param, maxLen, n)
	}
	u, err := url.Parse(s)
	if err != nil {
		return invalid(param, "Invalid %s: '%s' is not a valid URL.", param, shown(s))
	}
	// url.Parse lower-cases the scheme.
	if u.Scheme != "https" {
		return domainerr.New(domainerr.Invalid, domainerr.CodeURLNotHTTPS, param, "Invalid %s: must use https://.", param)
	}
	// Any '@' before the host makes a userinfo, even an empty one; the message does not repeat
	// the URL, which would echo the password.
	if u.User != nil {
		return domainerr.New(domainerr.Invalid, domainerr.CodeURLCredentials, param,
			"Invalid %s: must not contain a user name or password ('user:password@' before the host): the URL is shown in every read of the object.", param)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return invalid(param, "Invalid %s: expected an absolute URL with a host like 'https://example.com/webhooks', got '%s'.", param, shown(s))
	}
	return nil
}
