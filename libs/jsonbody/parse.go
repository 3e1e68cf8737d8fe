package jsonbody

import (
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// The parser reads a body into a tree that keeps what encoding/json's decoding into `any`
// loses: an object's members in order, repeated keys included, and whether each string was
// valid text. encoding/json lets the last of two equal keys win and turns invalid UTF-8 (and
// escapes of half a surrogate pair) into U+FFFD silently; the API refuses both, naming the
// parameter, so the tree has to show them. The grammar is JSON's (RFC 8259), exactly what
// encoding/json accepts: Decode still decodes the destination with encoding/json, and a body
// this parser accepts must mean the same to both.
//
// A value is nil (null), bool, json.Number, string, badString, object or []any.

// object is a JSON object's members in the order they were written.
type object []member

type member struct {
	key string // as encoding/json would decode it (bad parts replaced by U+FFFD)
	val any
	bad bool // the key is not valid text (see badString)
}

// badString is a string that holds invalid UTF-8 or a \u escape of half a surrogate pair.
type badString struct{}

// maxDepth is encoding/json's limit on nesting.
const maxDepth = 10000

type parser struct {
	data  []byte
	pos   int
	depth int
}

// syntaxError is malformed JSON at an offset.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("%s at byte %d", e.msg, e.off)
}

func (p *parser) fail(msg string) error { return &syntaxError{msg: msg, off: p.pos} }

func (p *parser) unexpected(context string) error {
	if p.pos >= len(p.data) {
		return &syntaxError{msg: "unexpected end of JSON input", off: p.pos}
	}
	return p.fail(fmt.Sprintf("invalid character %s %s", quoteChar(p.data[p.pos]), context))
}

// quoteChar formats c as encoding/json's errors do.
func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < 0x20 || c >= 0x7f:
		return fmt.Sprintf("%q", rune(c))
	}
	return "'" + string(rune(c)) + "'"
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value reads one value; the next byte is not white space.
func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.unexpected("")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, ok, err := p.str()
		if err != nil {
			return nil, err
		}
		if !ok {
			return badString{}, nil
		}
		return s, nil
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return nil, p.unexpected("looking for beginning of value")
}

func (p *parser) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if p.pos >= len(p.data) || p.data[p.pos] != lit[i] {
			return p.unexpected("in literal " + lit)
		}
		p.pos++
	}
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail("exceeded max depth")
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // {
	p.skipSpace()
	obj := object{}
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return obj, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.unexpected("looking for beginning of object key string")
		}
		k, ok, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.unexpected("after object key")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		obj = append(obj, member{key: k, val: v, bad: !ok})
		p.skipSpace()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				p.skipSpace()
				continue
			case '}':
				p.pos++
				p.depth--
				return obj, nil
			}
		}
		return nil, p.unexpected("after object key:value pair")
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // [
	p.skipSpace()
	arr := []any{}
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return arr, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				p.skipSpace()
				continue
			case ']':
				p.pos++
				p.depth--
				return arr, nil
			}
		}
		return nil, p.unexpected("after array element")
	}
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and keeps its text.
func (p *parser) number() (any, error) {
	d, start := p.data, p.pos
	digits := func(context string) error {
		if p.pos >= len(d) || d[p.pos] < '0' || d[p.pos] > '9' {
			return p.unexpected(context)
		}
		for p.pos < len(d) && '0' <= d[p.pos] && d[p.pos] <= '9' {
			p.pos++
		}
		return nil
	}
	if d[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(d) && d[p.pos] == '0' {
		p.pos++
	} else if err := digits("in numeric literal"); err != nil {
		return nil, err
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if err := digits("after decimal point in numeric literal"); err != nil {
			return nil, err
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if err := digits("in exponent of numeric literal"); err != nil {
			return nil, err
		}
	}
	return json.Number(d[start:p.pos]), nil
}

// str reads a string at the opening quote. ok is false when it holds invalid UTF-8 or a \u
// escape of half a surrogate pair; s then has U+FFFD in their place, as encoding/json would.
func (p *parser) str() (s string, ok bool, err error) {
	d := p.data
	start := p.pos + 1
	i := start
	// Fast path: no escapes, valid UTF-8.
	for i < len(d) {
		c := d[i]
		if c == '"' {
			p.pos = i + 1
			return string(d[start:i]), true, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = i
			return "", false, p.unexpected("in string literal")
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(d[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	buf := make([]byte, i-start, i-start+16)
	copy(buf, d[start:i])
	ok = true
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(buf), ok, nil
		case c == '\\':
			if i+1 >= len(d) {
				p.pos = len(d)
				return "", false, p.unexpected("")
			}
			switch e := d[i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r := hex4(d[i+2:])
				if r < 0 {
					p.pos = i + 2 + hexLen(d[i+2:])
					return "", false, p.unexpected("in \\u hexadecimal character escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// A pair is two escapes; anything else is half a character.
					if len(d) >= i+8 && d[i+2] == '\\' && d[i+3] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(d[i+4:])); dec != utf8.RuneError {
							buf = utf8.AppendRune(buf, dec)
							i += 8
							continue
						}
					}
					r, ok = utf8.RuneError, false
				}
				buf = utf8.AppendRune(buf, r)
			default:
				p.pos = i + 1
				return "", false, p.unexpected("in string escape code")
			}
			i += 2
		case c < 0x20:
			p.pos = i
			return "", false, p.unexpected("in string literal")
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				ok = false
			}
			buf = utf8.AppendRune(buf, r)
			i += size
		}
	}
	p.pos = len(d)
	return "", false, p.unexpected("")
}

// hex4 reads four hex digits, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// hexLen is how many of (up to) four bytes are hex digits: where a bad escape goes wrong.
func hexLen(b []byte) int {
	n := 0
	for n < len(b) && n < 4 && hex4([]byte{'0', '0', '0', b[n]}) >= 0 {
		n++
	}
	return n
}
