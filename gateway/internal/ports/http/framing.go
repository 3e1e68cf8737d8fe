package http

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"rentalplatform/libs/apierr"
)

// Codes of requests refused for their framing.
const (
	codeHTTPVersionUnsupported = "http_version_not_supported"
)

// checkFraming refuses a request whose message framing another HTTP parser on the path (a load
// balancer, a proxy in front of the gateway, a service behind it) could read differently: that
// disagreement about where one request ends is how a second request is smuggled inside the first.
// fasthttp (since v1.5x) refuses most of these itself, but releases before it let the last of
// several Content-Length headers win, let Transfer-Encoding override Content-Length and took
// any transfer coding for chunked; it still ignores Transfer-Encoding in HTTP/1.0. So the
// header block is checked here too, from the raw bytes fasthttp sets aside, before anything
// acts on the request: the gateway's framing rules do not depend on the engine's version,
// and TestFraming holds them either way. Every refusal closes the connection (the caller's
// writeRaw does), since the rest of the byte stream cannot be trusted.
//
// The choices (RFC 9112 §6.1, §6.3 leave some open) are documented in docs/api.md, "HTTP
// framing": any repeated Content-Length is refused, even with equal values; Transfer-Encoding
// with Content-Length is refused rather than letting chunked win; the only transfer coding
// accepted is a single "chunked"; HTTP/1.0 is answered once and the connection closed.
func checkFraming(h *fasthttp.RequestHeader) *apierr.Error {
	http11 := h.IsHTTP11()
	if proto := h.Protocol(); !http11 && !bytes.Equal(proto, []byte("HTTP/1.0")) {
		if len(proto) == len("HTTP/2.0") && bytes.HasPrefix(proto, []byte("HTTP/")) &&
			isDigit(proto[5]) && proto[6] == '.' && isDigit(proto[7]) && proto[5] != '0' {
			return apierr.New(http.StatusHTTPVersionNotSupported, apierr.InvalidRequest, codeHTTPVersionUnsupported,
				"This API is served over HTTP/1.1 (HTTP/2 needs TLS with ALPN, which this listener does not offer).")
		}
		return malformed("The request line does not end with a valid HTTP version.")
	}

	if !validTarget(h.RequestURI()) {
		return malformed("The request target is not a path ('/…') or an absolute http(s) URL of visible ASCII characters with valid percent-escapes and no fragment.")
	}

	var contentLengths, transferEncodings, hosts int
	var transferEncoding []byte
	raw := h.RawHeaders()
	for len(raw) > 0 {
		var line []byte
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			line, raw = raw, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			break // the end of the header block
		}
		if line[0] == ' ' || line[0] == '\t' {
			return malformed("Header lines may not be folded (obs-fold); send each header on one line.")
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return malformed("A header name is empty or contains characters a header name may not (no spaces before the colon).")
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		if !isFieldValue(value) {
			return malformed("A header value contains a control character.")
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			contentLengths++
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			transferEncodings++
			transferEncoding = value
		case bytes.EqualFold(name, []byte("Host")):
			hosts++
		}
	}

	switch {
	case contentLengths > 1:
		return malformed("The request has more than one Content-Length header.")
	case transferEncodings > 0 && contentLengths > 0:
		return malformed("The request has both Transfer-Encoding and Content-Length; send one of them.")
	case transferEncodings > 0 && !http11:
		// fasthttp ignores Transfer-Encoding in HTTP/1.0, so the chunks would be read as the
		// next request.
		return malformed("Transfer-Encoding is not allowed in an HTTP/1.0 request.")
	case transferEncodings > 1:
		return malformed("The request has more than one Transfer-Encoding header.")
	case transferEncodings == 1 && !bytes.EqualFold(transferEncoding, []byte("chunked")):
		return malformed("The only Transfer-Encoding accepted is a single 'chunked'.")
	case hosts > 1:
		return malformed("The request has more than one Host header.")
	case hosts == 0 && http11:
		return malformed("An HTTP/1.1 request must have a Host header.")
	}
	return nil
}

// validTarget reports whether the request target is in origin-form ("/path?query") or
// absolute-form ("https://host/path") and made of visible ASCII with well-formed
// percent-escapes and no fragment (a request target never has one). Anything else — a space inside the target, a bare "%", a relative "x" — is
// read differently by different parsers, so it is refused rather than guessed at.
func validTarget(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == '%':
			if i+2 >= len(t) || !isHex(t[i+1]) || !isHex(t[i+2]) {
				return false
			}
			i += 2
		case c <= ' ' || c >= 0x7f || c == '#':
			return false
		}
	}
	if t[0] == '/' {
		return true
	}
	// The absolute form is rare (proxies send it); the standard parser settles it.
	lower := bytes.ToLower(t[:min(len(t), len("https://"))])
	if !bytes.HasPrefix(lower, []byte("http://")) && !bytes.HasPrefix(lower, []byte("https://")) {
		return false
	}
	u, err := url.ParseRequestURI(string(t))
	return err == nil && u.Host != ""
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func malformed(msg string) *apierr.Error {
	return apierr.New(http.StatusBadRequest, apierr.InvalidRequest, codeRequestMalformed, msg)
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// isToken reports whether b is an RFC 9110 token (the grammar of header names).
func isToken(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// isFieldValue reports whether b holds no control character other than horizontal tab (RFC
// 9110 §5.5: a bare CR or a NUL in a value is refused, not repaired).
func isFieldValue(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
