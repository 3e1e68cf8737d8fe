package validate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text checks a free-text parameter (a name, an address line, a reference, a description, a
// metadata value): valid UTF-8, at most maxRunes characters, and free of control characters,
// which nothing a person types contains and which break what the value is shown in: a NUL
// cuts C strings and some databases' text, an escape sequence rewrites the terminal of whoever
// reads a log, a line break forges a line of a log or a CSV export. Refused are every C0
// control (U+0000 to U+001F), DEL (U+007F), every C1 control (U+0080 to U+009F, which some
// systems still read as escapes) and the Unicode line and paragraph separators (U+2028,
// U+2029: line breaks to JavaScript and to many renderers). A multi-line field (lines true:
// descriptions, metadata values) accepts tab, line feed and carriage return, and the two
// separators. Other invisible characters (zero-width joiners, bidirectional marks) are
// accepted: scripts need them.
//
// An empty value passes: whether a field may be empty or blank is its own rule, checked by
// the caller (domainerr.Missing, "must not be empty"). Refusals are parameter_invalid naming
// param; the message says which character was found and where rather than repeating the
// value, which may be unprintable.
func Text(param, s string, maxRunes int, lines bool) error {
	if problem := textProblem(s, lines); problem != "" {
		return invalid(param, "Invalid %s: must %s.", param, problem)
	}
	if n := utf8.RuneCountInString(s); n > maxRunes {
		return invalid(param, "Invalid %s: must be at most %d characters, got %d.", param, maxRunes, n)
	}
	return nil
}

// textProblem returns what breaks Text's character rules in s, phrased to follow "must", or ""
// when nothing does.
func textProblem(s string, lines bool) string {
	n := 0
	for i, r := range s {
		n++
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return fmt.Sprintf("be valid UTF-8; byte %d is 0x%02X", i, s[i])
			}
		}
		if IsControl(r) && !(lines && isLineBreak(r)) {
			if lines {
				return fmt.Sprintf("not contain control characters other than tab, line feed, carriage return and the Unicode line and paragraph separators; character %d is %U", n, r)
			}
			return fmt.Sprintf("not contain control characters or line breaks; character %d is %U", n, r)
		}
	}
	return ""
}

// TrimSpace trims the white space around s that Text accepts in such a field (lines: a
// multi-line one), for fields stored trimmed. A control character is never trimmed away, so a
// value ending in NUL, NEL (U+0085) or, in a single-line field, a line feed is refused by Text
// rather than silently cut.
func TrimSpace(s string, lines bool) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) && (!IsControl(r) || lines && isLineBreak(r))
	})
}

// IsControl reports whether Text refuses r in a single-line field: a C0 control, DEL, a C1
// control, or a Unicode line or paragraph separator. Code that cleans a value rather than
// refusing it (the name of an uploaded file) drops these.
func IsControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u2028' || r == '\u2029'
}

// isLineBreak reports whether a multi-line field accepts r although IsControl holds.
func isLineBreak(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029'
}
