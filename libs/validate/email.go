package validate

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxEmailLen is the longest address accepted: a forward path in SMTP holds at most 256
// octets including its angle brackets (RFC 5321 section 4.5.3.1.3). It is counted in
// characters, like every other length in the API; for an ASCII address that is the same.
const maxEmailLen = 254

// Email checks that s is a bare email address, local@domain: at most 254 characters,
// accepted by net/mail.ParseAddress as exactly itself (no display name, angle brackets,
// comments or quoting that the parser would rewrite), without whitespace, and with a domain
// name of at least two non-empty dot-separated labels. Domain literals (user@[192.0.2.1])
// are refused: no one gives such an address for a person. The address is not lower-cased,
// since the local part is case-sensitive in principle, and deliverability is not checked.
func Email(param, s string) error {
	if s == "" {
		return empty(param)
	}
	if n := utf8.RuneCountInString(s); n > maxEmailLen {
		return invalid(param, "Invalid %s: must be at most %d characters, got %d.", param, maxEmailLen, n)
	}
	if !isEmail(s) {
		return invalid(param, "Invalid %s: expected an email address like 'jane.doe@example.com', got '%s'.", param, shown(s))
	}
	return nil
}

func isEmail(s string) bool {
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at < 1 {
		return false
	}
	domain := s[at+1:]
	if strings.HasPrefix(domain, "[") || !strings.Contains(domain, ".") {
		return false
	}
	for label := range strings.SplitSeq(domain, ".") {
		if label == "" {
			return false
		}
	}
	return true
}
