// Package testfiles makes small but real files of every type a case file may have (and some it
// may not), for tests: images from the standard library's encoders, Office documents as ZIP
// packages with the parts Word and Excel write first, and text formats.
package testfiles

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
)

// Sample is a file and the content type the service must find in it.
type Sample struct {
	Name        string // file name sent by the client
	ContentType string
	Body        []byte
}

// Allowed returns one file of each accepted type.
func Allowed() []Sample {
	return []Sample{
		{"invoice.pdf", "application/pdf", PDF()},
		{"photo.png", "image/png", PNG()},
		{"scan.jpg", "image/jpeg", JPEG()},
		{"fax.tiff", "image/tiff", TIFF()},
		{"notes.txt", "text/plain", []byte("Called the debtor on 3 March; promised to pay by Friday.\nNo payment yet.\n")},
		{"ledger.csv", "text/csv", []byte("date,amount,note\n2024-01-31,120000,rent\n2024-02-29,120000,rent\n")},
		{"letter.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Office("word/document.xml")},
		{"statement.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", Office("xl/workbook.xml")},
		{"reply.eml", "message/rfc822", []byte("From: Debtor <debtor@example.com>\r\nTo: landlord@example.com\r\nSubject: Re: rent\r\nDate: Mon, 4 Mar 2024 10:00:00 +0100\r\n\r\nI will pay next week.\r\n")},
	}
}

// PDF returns a minimal PDF document.
func PDF() []byte {
	return []byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
}

func img() image.Image {
	m := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for x := range 16 {
		m.Set(x, x, color.RGBA{R: 200, A: 255})
	}
	return m
}

// PNG returns a 16×16 PNG image.
func PNG() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, img())
	return b.Bytes()
}

// JPEG returns a 16×16 JPEG image.
func JPEG() []byte {
	var b bytes.Buffer
	_ = jpeg.Encode(&b, img(), nil)
	return b.Bytes()
}

// TIFF returns a 1×1 little-endian TIFF image (one black pixel, uncompressed).
func TIFF() []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("II*\x00")
	_ = binary.Write(&b, le, uint32(8)) // first IFD
	entries := []struct {
		tag, typ uint16
		count    uint32
		value    uint32
	}{
		{256, 3, 1, 1},  // width
		{257, 3, 1, 1},  // height
		{258, 3, 1, 8},  // bits per sample
		{259, 3, 1, 1},  // no compression
		{262, 3, 1, 1},  // black is zero
		{273, 4, 1, 62}, // strip offset: after the IFD
		{277, 3, 1, 1},  // samples per pixel
		{279, 4, 1, 1},  // strip byte count
	}
	_ = binary.Write(&b, le, uint16(len(entries)))
	for _, e := range entries {
		_ = binary.Write(&b, le, e.tag)
		_ = binary.Write(&b, le, e.typ)
		_ = binary.Write(&b, le, e.count)
		_ = binary.Write(&b, le, e.value)
	}
	_ = binary.Write(&b, le, uint32(0)) // no next IFD
	b.WriteByte(0)                      // the pixel
	return b.Bytes()
}

// Office returns an Office Open XML package with the parts a word processor or spreadsheet
// writes first, then main (word/document.xml or xl/workbook.xml).
func Office(main string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, f := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"_rels/.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>`},
		{"docProps/app.xml", `<?xml version="1.0"?><Properties/>`},
		{main, `<?xml version="1.0"?><document/>`},
	} {
		w, _ := z.Create(f.name)
		_, _ = w.Write([]byte(f.body))
	}
	_ = z.Close()
	return b.Bytes()
}

// Refused returns files of types a case does not take.
func Refused() []Sample {
	return []Sample{
		{"tool.exe", "", append([]byte("MZ\x90\x00\x03\x00\x00\x00"), make([]byte, 64)...)},
		{"archive.zip", "", Office("src/main.go")},
		{"page.gif", "", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")},
		{"binary.txt", "", []byte("looks like text\x00\x01\x02 but is not")},
		{"empty.txt", "", nil},
	}
}
