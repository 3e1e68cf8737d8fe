package domain

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

// The content types a case file may have. The type is read from the file's first bytes (Sniff),
// never taken from the client.
const (
	TypePDF  = "application/pdf"
	TypePNG  = "image/png"
	TypeJPEG = "image/jpeg"
	TypeTIFF = "image/tiff"
	TypeText = "text/plain"
	TypeCSV  = "text/csv"
	TypeEML  = "message/rfc822"
	TypeDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	TypeXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
)

// SniffLen is how much of a file Sniff reads: enough for an Office file's first entries (its
// parts list and the folder that names the kind of document come first) and for an email's
// headers.
const SniffLen = 64 << 10

// IsText reports whether files of the content type must be UTF-8 text throughout (TextCheck).
func IsText(contentType string) bool {
	return contentType == TypeText || contentType == TypeCSV || contentType == TypeEML
}

// Sniff returns the content type of a file from its first bytes, head (up to SniffLen; whole
// says head is the entire file), or FileTypeUnsupported. The client's file name only breaks a
// tie the content leaves open: a single line of comma-separated values is CSV when the name
// ends in .csv, plain text otherwise.
func Sniff(head []byte, filename string, whole bool) (string, error) {
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return TypePDF, nil
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return TypePNG, nil
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return TypeJPEG, nil
	case bytes.HasPrefix(head, []byte("II*\x00")), bytes.HasPrefix(head, []byte("MM\x00*")):
		return TypeTIFF, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		switch officeKind(head) {
		case "word/":
			return TypeDOCX, nil
		case "xl/":
			return TypeXLSX, nil
		}
		return "", FileTypeUnsupported("a ZIP archive that is not a Word (.docx) or Excel (.xlsx) document")
	}
	text := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	var tc TextCheck
	_, _ = tc.Write(text)
	if tc.err != nil || (whole && tc.Close() != nil) {
		return "", FileTypeUnsupported("binary content of a type not accepted")
	}
	if len(text) == 0 {
		return "", FileTypeUnsupported("an empty file")
	}
	if m := markup(text); m != "" {
		return "", FileTypeUnsupported(m)
	}
	switch {
	case looksLikeEmail(text):
		return TypeEML, nil
	case looksLikeCSV(text, whole, strings.HasSuffix(strings.ToLower(filename), ".csv")):
		return TypeCSV, nil
	}
	return TypeText, nil
}

// markupTags are the openings a browser's content sniffing takes for HTML (the WHATWG MIME
// Sniffing standard's list, which Go's http.DetectContentType follows), each followed by a
// space or '>' there.
var markupTags = []string{"<!doctype html", "<html", "<head", "<script", "<iframe", "<h1", "<div",
	"<font", "<table", "<a", "<style", "<title", "<b", "<body", "<br", "<p", "<!--"}

// markup names what text is when it opens as HTML, XML or SVG, else "". Such a file is text,
// but not the plain text the issue accepts: served back, a browser that ignored the download's
// nosniff would render it (and run its scripts), so it is refused like any other type.
func markup(text []byte) string {
	t := bytes.TrimLeft(text, " \t\r\n\f")
	head := strings.ToLower(string(t[:min(len(t), 16)]))
	if strings.HasPrefix(head, "<?xml") || strings.HasPrefix(head, "<svg") {
		return "XML or SVG markup"
	}
	for _, tag := range markupTags {
		if strings.HasPrefix(head, tag) && len(head) > len(tag) && (head[len(tag)] == ' ' || head[len(tag)] == '>') {
			return "HTML markup"
		}
	}
	return ""
}

// FileTypeUnsupported refuses a file by what its content was found to be.
func FileTypeUnsupported(found string) error {
	return domainerr.New(domainerr.UnsupportedMedia, CodeFileTypeUnsupported, "file",
		"The file's content is %s. Accepted: PDF, PNG, JPEG, TIFF, plain text, CSV, Word (.docx), Excel (.xlsx) and email (.eml) files.", found)
}

// officeKind returns the folder ("word/" or "xl/") that the entries of an Office Open XML
// package in head are stored under, or "". It reads the ZIP local file headers in order; an
// entry whose size is only given after its data (flag bit 3) ends the walk, and the rest of
// head is searched for further headers instead.
func officeKind(head []byte) string {
	const localHeader = 30
	found := ""
	see := func(name string) bool {
		for _, k := range []string{"word/", "xl/"} {
			if strings.HasPrefix(name, k) {
				if found != "" && found != k {
					found = "?" // both kinds: neither
					return true
				}
				found = k
			}
		}
		return false
	}
	for off := 0; off+localHeader <= len(head); {
		if !bytes.Equal(head[off:off+4], []byte("PK\x03\x04")) {
			next := bytes.Index(head[off+1:], []byte("PK\x03\x04"))
			if next < 0 {
				break
			}
			off += 1 + next
			continue
		}
		flags := binary.LittleEndian.Uint16(head[off+6:])
		size := int(binary.LittleEndian.Uint32(head[off+18:]))
		nameLen := int(binary.LittleEndian.Uint16(head[off+26:]))
		extraLen := int(binary.LittleEndian.Uint16(head[off+28:]))
		nameEnd := off + localHeader + nameLen
		if nameEnd > len(head) {
			break
		}
		if see(string(head[off+localHeader : nameEnd])) {
			break
		}
		if flags&0x8 != 0 || size < 0 {
			off = nameEnd // sizes follow the data: search on
			continue
		}
		off = nameEnd + extraLen + size
	}
	if found == "?" {
		return ""
	}
	return found
}

// looksLikeEmail reports whether text opens with an RFC 5322 header block that names a sender
// and something only a message has (a date, a subject, a recipient, an id or a MIME version),
// ended by an empty line.
func looksLikeEmail(text []byte) bool {
	var from, other bool
	lines := 0
	for len(text) > 0 {
		line, rest, ok := bytes.Cut(text, []byte("\n"))
		if !ok {
			return false // the header block does not end within what was read
		}
		text = rest
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			return lines >= 2 && from && other
		}
		lines++
		if line[0] == ' ' || line[0] == '\t' {
			if lines == 1 {
				return false
			}
			continue // a folded header
		}
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || len(name) > 76 {
			return false
		}
		for _, c := range name {
			if c <= ' ' || c >= 0x7f {
				return false
			}
		}
		switch strings.ToLower(string(name)) {
		case "from":
			from = true
		case "date", "subject", "to", "message-id", "mime-version", "received":
			other = true
		}
	}
	return false
}

// looksLikeCSV reports whether text is records of comma- (or semicolon-) separated values,
// every one with the same number of fields, at least two: two records or more, or one when
// the file is named .csv. A last line cut off by the end of head is not judged.
func looksLikeCSV(text []byte, whole, csvName bool) bool {
	if !whole {
		if i := bytes.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i+1]
		} else {
			return false
		}
	}
	for _, sep := range []rune{',', ';'} {
		r := csv.NewReader(bytes.NewReader(text))
		r.Comma = sep
		records, fields := 0, 0
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || len(rec) < 2 {
				records = -1
				break
			}
			records++
			fields = len(rec)
		}
		if fields >= 2 && (records >= 2 || (records == 1 && csvName)) {
			return true
		}
	}
	return false
}

// TextCheck is an io.Writer that checks that what it is given is UTF-8 text: valid UTF-8,
// with no control characters other than tab, line feed, form feed and carriage return. A file
// of a text type is checked throughout as it is stored, so text that turns binary after its
// first bytes is refused too. Close reports a character cut off at the end.
type TextCheck struct {
	carry []byte // the start of a character split across writes
	buf   []byte
	err   error
}

var errNotText = FileTypeUnsupported("not text throughout (invalid UTF-8 or control characters), though it opens as text")

// Write checks p; it never fails, the verdict is Err's.
func (t *TextCheck) Write(p []byte) (int, error) {
	if t.err != nil {
		return len(p), nil
	}
	b := p
	if len(t.carry) > 0 {
		t.buf = append(append(t.buf[:0], t.carry...), p...)
		b = t.buf
		t.carry = t.carry[:0]
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r' || c == 0x7f {
				t.err = errNotText
				return len(p), nil
			}
			i++
			continue
		}
		if !utf8.FullRune(b[i:]) {
			t.carry = append(t.carry, b[i:]...)
			break
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError || (r >= 0x80 && r < 0xa0) {
			t.err = errNotText
			return len(p), nil
		}
		i += size
	}
	return len(p), nil
}

// Err returns the verdict so far (nil: text).
func (t *TextCheck) Err() error { return t.err }

// Close returns the verdict on the whole text.
func (t *TextCheck) Close() error {
	if t.err == nil && len(t.carry) > 0 {
		t.err = errNotText
	}
	return t.err
}
