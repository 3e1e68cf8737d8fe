package domain_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"

	"rentalplatform/collections-svc/internal/domain"
	"rentalplatform/collections-svc/internal/testfiles"
)

func TestSniffAllowed(t *testing.T) {
	for _, s := range testfiles.Allowed() {
		got, err := domain.Sniff(s.Body, s.Name, true)
		if err != nil || got != s.ContentType {
			t.Errorf("%s: %q, %v; want %s", s.Name, got, err, s.ContentType)
		}
		// The client's name does not decide the type (but for one CSV line, below).
		if got, err := domain.Sniff(s.Body, "renamed.exe", true); err != nil || got != s.ContentType {
			t.Errorf("%s named renamed.exe: %q, %v", s.Name, got, err)
		}
	}
}

func TestSniffRefused(t *testing.T) {
	for _, s := range testfiles.Refused() {
		_, err := domain.Sniff(s.Body, s.Name, true)
		if e := domainerr.As(err); e == nil || e.Kind != domainerr.UnsupportedMedia || e.Code != domain.CodeFileTypeUnsupported || e.Param != "file" {
			t.Errorf("%s: %v; want 415 file_type_unsupported", s.Name, err)
		}
	}
}

func TestSniffEdges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     string
		filename string
		whole    bool
		want     string // "" : refused
	}{
		{"one CSV line named .csv", "a,b,c\n", "x.csv", true, domain.TypeCSV},
		{"one CSV line named .txt", "a,b,c\n", "x.txt", true, domain.TypeText},
		{"semicolon CSV", "a;b\n1;2\n", "x", true, domain.TypeCSV},
		{"ragged CSV is text", "a,b\n1,2,3\n", "x.csv", true, domain.TypeText},
		{"prose", "Dear tenant,\nplease pay.\n", "x", true, domain.TypeText},
		{"UTF-8 BOM text", "\xef\xbb\xbfBetreff: Miete\n", "x", true, domain.TypeText},
		{"text cut mid-character, not whole", "ab\xc3", "x", false, domain.TypeText},
		{"text cut mid-character, whole", "ab\xc3", "x", true, ""},
		{"invalid UTF-8", "ab\xff\xfe", "x", true, ""},
		{"C1 control", "ab\u0085cd", "x", true, ""},
		{"email without a sender", "To: a@example.com\nSubject: x\n\nbody\n", "x.eml", true, domain.TypeText},
		{"email with LF line ends", "Received: from x\n\tby y\nFrom: a@example.com\nDate: today\n\nbody\n", "x", true, domain.TypeEML},
		{"headers never ended", "From: a@example.com\nSubject: x\n", "x", true, domain.TypeText},
		{"zip with both kinds", string(append(testfiles.Office("word/document.xml"), testfiles.Office("xl/workbook.xml")...)), "x", true, ""},
		{"big-endian TIFF", "MM\x00*\x00\x00\x00\x08", "x", true, domain.TypeTIFF},
		{"HTML", "<!DOCTYPE html>\n<html><script>alert(1)</script></html>\n", "x.txt", true, ""},
		{"HTML after blank lines", "\n\n  <HTML>\n<body>hi</body>", "x.txt", true, ""},
		{"a script", "<script src=x></script>", "x.txt", true, ""},
		{"XML", "<?xml version=\"1.0\"?><a/>", "x.txt", true, ""},
		{"SVG", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>", "x.txt", true, ""},
		{"an HTML comment", "<!-- x -->", "x.txt", true, ""},
		{"text that mentions a tag", "Use <b> for bold.\n", "x.txt", true, domain.TypeText},
		{"text opening with an angle bracket", "<bank statement attached>\n", "x.txt", true, domain.TypeText},
		{"CSV of markup-like cells", "a,<b>\n1,2\n", "x.csv", true, domain.TypeCSV},
	} {
		got, err := domain.Sniff([]byte(tc.body), tc.filename, tc.whole)
		if (tc.want == "") != (err != nil) || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestTextCheckSplits: the verdict does not depend on where the writes split the text.
func TestTextCheckSplits(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"Grüße, 東京 €\r\n\ttab", true},
		{"ok then \x00", false},
		{"cut \xe2\x82", false},
		{"bad \xed\xa0\x80 surrogate", false},
	} {
		b := []byte(tc.text)
		for split := 0; split <= len(b); split++ {
			var c domain.TextCheck
			_, _ = c.Write(b[:split])
			_, _ = c.Write(b[split:])
			if got := c.Close() == nil; got != tc.ok {
				t.Errorf("%q split at %d: text %v, want %v", tc.text, split, got, tc.ok)
			}
		}
	}
}

func TestNewFile(t *testing.T) {
	p := domain.NewFileParams{ID: "file_1", Account: "acct_1", Case: "dc_1", Created: now, Filename: `C:\Users\x\Rechnung März.pdf`,
		Size: 10, ContentType: domain.TypePDF, SHA256: "ab", DocumentType: ptr("original_invoice"), Description: ptr(" Invoice\nfor March ")}
	f, err := domain.NewFile(p)
	if err != nil || f.Filename() != "Rechnung März.pdf" || f.Description() != "Invoice\nfor March" || f.DocumentType() != domain.DocOriginalInvoice {
		t.Fatalf("NewFile: %v %+v", err, f.State())
	}
	for _, tc := range []struct {
		name  string
		edit  func(*domain.NewFileParams)
		code  string
		param string
	}{
		{"document_type missing", func(p *domain.NewFileParams) { p.DocumentType = nil }, "parameter_missing", "document_type"},
		{"document_type unknown", func(p *domain.NewFileParams) { p.DocumentType = ptr("contract") }, "parameter_invalid", "document_type"},
		{"description blank", func(p *domain.NewFileParams) { p.Description = ptr(" ") }, "parameter_invalid", "description"},
		{"description too long", func(p *domain.NewFileParams) { p.Description = ptr(strings.Repeat("d", domain.MaxDescriptionLen+1)) }, "parameter_invalid", "description"},
		{"description control", func(p *domain.NewFileParams) { p.Description = ptr("a\x07b") }, "parameter_invalid", "description"},
		{"description NUL", func(p *domain.NewFileParams) { p.Description = ptr("a\x00b") }, "parameter_invalid", "description"},
		{"description C1", func(p *domain.NewFileParams) { p.Description = ptr("a\u009bb") }, "parameter_invalid", "description"},
		{"description invalid UTF-8", func(p *domain.NewFileParams) { p.Description = ptr("a\xc3") }, "parameter_invalid", "description"},
	} {
		q := p
		tc.edit(&q)
		_, err := domain.NewFile(q)
		if e := domainerr.As(err); e == nil || e.Code != tc.code || e.Param != tc.param {
			t.Errorf("%s: %v; want %s on %s", tc.name, err, tc.code, tc.param)
		}
	}
	// A form's CRLF line breaks (as browsers send them) and lone CRs are stored as LF.
	q := p
	q.Description = ptr("Invoice\r\nfor March\rand April\tpaid")
	if f, err := domain.NewFile(q); err != nil || f.Description() != "Invoice\nfor March\nand April\tpaid" {
		t.Errorf("CRLF description: %v %q", err, f.Description())
	}
	for _, dt := range domain.DocumentTypes {
		q := p
		q.DocumentType = ptr(string(dt))
		if _, err := domain.NewFile(q); err != nil {
			t.Errorf("%s: %v", dt, err)
		}
	}
}

func TestCleanFilename(t *testing.T) {
	long := strings.Repeat("a", 300) + ".pdf"
	for _, tc := range []struct{ in, want string }{
		{"invoice.pdf", "invoice.pdf"},
		{"../../etc/passwd", "passwd"},
		{`C:\x\y.docx`, "y.docx"},
		{"a\x00b\nc.txt", "abc.txt"},
		{"", "file"},
		{"..", "file"},
		{"dir/", "file"},
		{"bad\xffname", "badname"},
		{long, strings.Repeat("a", domain.MaxFilenameLen-4) + ".pdf"},
	} {
		if got := domain.CleanFilename(tc.in); got != tc.want {
			t.Errorf("CleanFilename(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzSniff: any content is either refused with a 415 or given an accepted type; a text type
// agrees with TextCheck over the whole file written in two pieces; nothing panics.
func FuzzSniff(f *testing.F) {
	for _, s := range append(testfiles.Allowed(), testfiles.Refused()...) {
		f.Add(s.Body, s.Name, 3)
	}
	f.Fuzz(func(t *testing.T, body []byte, name string, split int) {
		typ, err := domain.Sniff(body, name, true)
		if err != nil {
			if domainerr.KindOf(err) != domainerr.UnsupportedMedia {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		switch typ {
		case domain.TypePDF, domain.TypePNG, domain.TypeJPEG, domain.TypeTIFF, domain.TypeDOCX, domain.TypeXLSX:
		case domain.TypeText, domain.TypeCSV, domain.TypeEML:
			var c domain.TextCheck
			if split < 0 {
				split = -split
			}
			split %= len(body) + 1
			_, _ = c.Write(body[:split])
			_, _ = c.Write(body[split:])
			if c.Close() != nil || !utf8.Valid(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))) {
				t.Fatalf("%s but not text throughout", typ)
			}
		default:
			t.Fatalf("type %q is not an accepted one", typ)
		}
	})
}

// FuzzCleanFilename: whatever a client sends, the kept name is valid UTF-8 of at most
// MaxFilenameLen characters, with no path separator or control character.
func FuzzCleanFilename(f *testing.F) {
	for _, s := range []string{"invoice.pdf", "../x", `a\b`, "\x00", strings.Repeat("é", 300) + ".tiff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := domain.CleanFilename(in)
		if !utf8.ValidString(out) || utf8.RuneCountInString(out) > domain.MaxFilenameLen || out == "" ||
			strings.ContainsAny(out, `/\`) || strings.ContainsFunc(out, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("CleanFilename(%q) = %q", in, out)
		}
	})
}

// FuzzParseReference: a reference accepted is canonical and parses to itself.
func FuzzParseReference(f *testing.F) {
	f.Add("DC-7K3M9Q")
	f.Add("dc-00000z")
	f.Fuzz(func(t *testing.T, in string) {
		ref, ok := domain.ParseReference(in)
		if !ok {
			return
		}
		if again, ok2 := domain.ParseReference(ref); !ok2 || again != ref || !strings.EqualFold(ref, in) {
			t.Fatalf("ParseReference(%q) = %q, not canonical", in, ref)
		}
	})
}
