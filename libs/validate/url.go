package validate

import (
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

// ParseHTTPSURL is the one parser of every URL the API accepts (a webhook endpoint's url, a
// session's webhook_url and redirect_url, a URL in the configuration). It checks s against the
// syntax of RFC 3986 strictly, where net/url is lenient, and against the platform's policy,
// and returns the URL in its normal form (scheme and host in lower case, the rest as given),
// whose String() is what the caller stores; a caller never parses the value again.
//
// Accepted is https://host[:port][/path][?query] and nothing else:
//   - at most maxLen characters (each caller passes its field's limit), and only printable
//     ASCII: spaces, control characters and other characters are percent-encoded, and an
//     international domain name is written in its xn-- (punycode) form, so what is stored is
//     exactly what is requested;
//   - the scheme https, in any case; any other scheme, or none, is url_not_https;
//   - no user name or password (any '@' before the host): url_credentials_not_allowed,
//     because the URL is stored and shown in every read of its object and in logs;
//   - a host that is a DNS name (dot-separated labels of 1 to 63 letters, digits, '-' or '_',
//     not starting or ending with '-', 253 characters at most; a name whose last label is all
//     digits must be a dotted-quad IPv4 address, which closes "http://2130706433/" and octal
//     tricks), or an IPv6 literal in brackets without a zone;
//   - a port, if any, from 1 to 65535 without leading zeros ("host:" is refused);
//   - a path and query of RFC 3986's characters, every '%' followed by two hex digits;
//   - no fragment ('#'): it is never sent to the server, so one in a URL the platform calls
//     is a mistake.
//
// The host is not resolved or checked against private ranges: libs/netguard does that where
// the platform connects.
func ParseHTTPSURL(param, s string, maxLen int) (*url.URL, error) {
	if s == "" {
		return nil, empty(param)
	}
	if n := utf8.RuneCountInString(s); n > maxLen {
		return nil, invalid(param, "Invalid %s: must be at most %d characters, got %d.", param, maxLen, n)
	}
	for i, r := range s {
		if r <= ' ' || r >= 0x7f {
			return nil, invalid(param, "Invalid %s: must be printable ASCII without spaces (percent-encode other characters, write an international domain name in its xn-- form); character %d is %U.",
				param, utf8.RuneCountInString(s[:i])+1, r)
		}
	}
	colon := strings.IndexByte(s, ':')
	if colon < 0 || strings.ContainsAny(s[:colon], "/?#") {
		// No scheme: a relative reference such as "example.com/hooks" or "//example.com".
		return nil, notHTTPS(param)
	}
	if scheme := s[:colon]; !validScheme(scheme) {
		return nil, invalid(param, "Invalid %s: '%s' is not a valid URL.", param, shown(s))
	} else if !strings.EqualFold(scheme, "https") {
		return nil, notHTTPS(param)
	}
	rest, ok := strings.CutPrefix(s[colon+1:], "//")
	if !ok {
		return nil, noHost(param, s)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	// Any '@' before the host makes a userinfo, even an empty one; the message does not repeat
	// the URL, which would echo the password.
	if strings.Contains(authority, "@") {
		return nil, domainerr.New(domainerr.Invalid, domainerr.CodeURLCredentials, param,
			"Invalid %s: must not contain a user name or password ('user:password@' before the host): the URL is shown in every read of the object.", param)
	}
	host, port, hasPort, ok := splitHostPort(authority)
	if !ok {
		return nil, invalid(param, "Invalid %s: '%s' is not a valid URL.", param, shown(s))
	}
	if host == "" {
		return nil, noHost(param, s)
	}
	if !validHost(host) {
		return nil, invalid(param, "Invalid %s: '%s' is not a valid host: expected a domain name (international ones in their xn-- form), an IPv4 address or an IPv6 address in brackets.", param, shown(host))
	}
	if hasPort && !validPort(port) {
		return nil, invalid(param, "Invalid %s: the port must be a number from 1 to 65535, got '%s'.", param, shown(port))
	}
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		return nil, invalid(param, "Invalid %s: must not contain a fragment ('#%s'): it is never sent to the server.", param, shown(tail[i+1:]))
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	for _, part := range []struct{ name, s, extra string }{{"path", path, "/"}, {"query", query, "/?"}} {
		if msg := checkPart(part.s, part.extra); msg != "" {
			return nil, invalid(param, "Invalid %s: %s in the %s.", param, msg, part.name)
		}
	}
	norm := "https://" + strings.ToLower(host)
	if hasPort {
		norm += ":" + port
	}
	norm += path
	if hasQuery {
		norm += "?" + query
	}
	u, err := url.Parse(norm)
	if err != nil {
		// Everything url.Parse refuses is refused above; a refusal here is a gap in the rules,
		// answered as invalid input rather than a crash.
		return nil, invalid(param, "Invalid %s: '%s' is not a valid URL.", param, shown(s))
	}
	return u, nil
}

func notHTTPS(param string) error {
	return domainerr.New(domainerr.Invalid, domainerr.CodeURLNotHTTPS, param, "Invalid %s: must use https://.", param)
}

func noHost(param, s string) error {
	return invalid(param, "Invalid %s: expected an absolute URL with a host like 'https://example.com/webhooks', got '%s'.", param, shown(s))
}

// validScheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 section 3.1).
func validScheme(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlpha(c) && !isDigit(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// splitHostPort splits an authority without userinfo into its host (an IPv6 literal keeps its
// brackets) and port; ok is false when what follows a bracketed host is not a port.
func splitHostPort(a string) (host, port string, hasPort, ok bool) {
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", false, false
		}
		host, after := a[:end+1], a[end+1:]
		if after == "" {
			return host, "", false, true
		}
		if after[0] != ':' {
			return "", "", false, false
		}
		return host, after[1:], true, true
	}
	host, port, hasPort = strings.Cut(a, ":")
	return host, port, hasPort, true
}

func validHost(h string) bool {
	if strings.HasPrefix(h, "[") {
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		return err == nil && a.Is6() && a.Zone() == ""
	}
	if len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !isAlpha(c) && !isDigit(c) && c != '-' && c != '_' {
				return false
			}
		}
	}
	// No top-level domain is all digits: such a name is an address, and only the dotted-quad
	// form is taken as one (not 2130706433, 0x7f.1 or 010.0.0.1, which resolvers read
	// differently).
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Is4()
	}
	return true
}

func validPort(p string) bool {
	if p == "" || len(p) > 5 || p[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if !isDigit(p[i]) {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}

// checkPart checks a path or query against RFC 3986: pchar (unreserved, sub-delims, ':', '@',
// percent-encodings) and the extra characters of the part. It returns what is wrong, or "".
func checkPart(s, extra string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "'%' must start a percent-encoding of two hexadecimal digits, got '" + shown(s[i:min(i+3, len(s))]) + "'"
			}
			i += 2
		case isAlpha(c), isDigit(c), strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0, strings.IndexByte(extra, c) >= 0:
		default:
			return "'" + string(c) + "' must be percent-encoded"
		}
	}
	return ""
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
