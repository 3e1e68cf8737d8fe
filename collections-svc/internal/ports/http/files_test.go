package http

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"testing"

	"rentalplatform/libs/domainerr"

	"rentalplatform/collections-svc/internal/app"
	"rentalplatform/collections-svc/internal/domain"
)

// fakeUpload takes the file as the app's Upload does, as far as reading goes: it reads the
// whole part, or answers a read error as the app does.
type fakeUpload struct {
	files int
	bytes int
}

func (f *fakeUpload) File(_ context.Context, _ string, r io.Reader) error {
	f.files++
	n, err := io.Copy(io.Discard, r)
	f.bytes += int(n)
	if err != nil {
		return &app.ReadError{Err: err}
	}
	return nil
}

func (f *fakeUpload) HasFile() bool { return f.files > 0 }

const boundary = "XyZ"

func form(t testing.TB, parts ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p[0] == "file" {
			fw, _ := w.CreateFormFile("file", "x.pdf")
			_, _ = fw.Write([]byte(p[1]))
		} else {
			_ = w.WriteField(p[0], p[1])
		}
	}
	_ = w.Close()
	return b.Bytes()
}

// FuzzReadForm: whatever body arrives, reading the form either succeeds with exactly one file
// and fields of at most maxFieldBytes, or fails with a 4xx domain error naming what is wrong;
// it never panics, and never reads past the body limit.
func FuzzReadForm(f *testing.F) {
	f.Add(form(f, [2]string{"file", "%PDF-1.4"}, [2]string{"document_type", "miscellaneous"}))
	f.Add(form(f, [2]string{"document_type", "original_invoice"}, [2]string{"description", "x"}, [2]string{"file", "abc"}))
	f.Add(form(f, [2]string{"file", "a"}, [2]string{"file", "b"}))
	f.Add(form(f, [2]string{"note", "x"}))
	f.Add([]byte("--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc"))
	f.Add([]byte("not multipart at all"))
	f.Fuzz(func(t *testing.T, body []byte) {
		up := &fakeUpload{}
		limit := int64(len(body)/2 + 1)
		fields, err := readForm(t.Context(), multipart.NewReader(&limitedBody{r: bytes.NewReader(body), left: limit}, boundary), up)
		if err != nil {
			e := domainerr.As(err)
			if e == nil || (e.Kind != domainerr.Invalid && e.Kind != domainerr.TooLarge) {
				t.Fatalf("error %v is not a 400 or 413 domain error", err)
			}
			if e.Kind == domainerr.TooLarge && int64(len(body)) <= limit {
				t.Fatalf("413 for a body within the limit")
			}
			return
		}
		if up.files != 1 {
			t.Fatalf("accepted a form with %d files", up.files)
		}
		for _, v := range []*string{fields.DocumentType, fields.Description} {
			if v != nil && len(*v) > maxFieldBytes {
				t.Fatalf("a field of %d bytes", len(*v))
			}
		}
	})
}

func truncated(b []byte) []byte { return b[:len(b)-10] }

func TestReadForm(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  []byte
		limit int64
		code  string
		param string
	}{
		{"ok", form(t, [2]string{"file", "x"}, [2]string{"document_type", "d"}), 1 << 20, "", ""},
		{"over the body limit", form(t, [2]string{"file", string(make([]byte, 5000))}), 1000, domain.CodeFileTooLarge, "file"},
		{"no parts", form(t), 1 << 20, "parameter_missing", "file"},
		{"unknown part", form(t, [2]string{"file", "x"}, [2]string{"purpose", "y"}), 1 << 20, "parameter_unknown", "purpose"},
		{"duplicate", form(t, [2]string{"description", "a"}, [2]string{"description", "b"}), 1 << 20, "parameter_duplicate", "description"},
		{"truncated", truncated(form(t, [2]string{"file", "x"}, [2]string{"document_type", "d"})), 1 << 20, CodeMultipartInvalid, ""},
	} {
		up := &fakeUpload{}
		_, err := readForm(t.Context(), multipart.NewReader(&limitedBody{r: bytes.NewReader(tc.body), left: tc.limit}, boundary), up)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		e := domainerr.As(err)
		if e == nil || e.Code != tc.code || e.Param != tc.param {
			t.Errorf("%s: %v; want %s on %q", tc.name, err, tc.code, tc.param)
		}
	}
	// A body of exactly the limit is not too large.
	body := form(t, [2]string{"file", "x"})
	if _, err := readForm(t.Context(), multipart.NewReader(&limitedBody{r: bytes.NewReader(body), left: int64(len(body))}, boundary), &fakeUpload{}); err != nil {
		t.Errorf("a body of exactly the limit: %v", err)
	}
}
