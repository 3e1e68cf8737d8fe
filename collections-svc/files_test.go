package main

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"rentalplatform/libs/servicetest"

	"rentalplatform/collections-svc/internal/domain"
	"rentalplatform/collections-svc/internal/testfiles"
)

func TestFiles(t *testing.T) {
	p := start(t)
	newClient := func(t *testing.T) *servicetest.Client { return servicetest.NewClient(t, p.URL("http")) }
	docType := part{name: "document_type", body: []byte("debtor_documents")}

	t.Run("each allowed type, up and back", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		id := createCase(t, c, caseBody())["id"].(string)
		for _, s := range testfiles.Allowed() {
			// The client's content type is not trusted: every file is sent as octet-stream.
			r := upload(t, c, id, part{name: "file", filename: s.Name, contentType: "application/octet-stream", body: s.Body}, docType,
				part{name: "description", body: []byte("Evidence: " + s.Name)})
			mustStatus(t, r, http.StatusOK)
			if r.Body["object"] != "case_file" || !strings.HasPrefix(r.Str("id"), "file_") || r.Body["collection_case"] != id ||
				r.Str("content_type") != s.ContentType || r.Body["size"] != float64(len(s.Body)) || r.Str("sha256") != sum(s.Body) ||
				r.Str("filename") != s.Name || r.Str("document_type") != "debtor_documents" || r.Str("description") != "Evidence: "+s.Name ||
				r.Body["is_test"] != true {
				t.Errorf("%s: %s", s.Name, r.Raw)
				continue
			}
			d := c.Send(http.MethodGet, "/v1/collection_cases/"+id+"/files/"+r.Str("id")+"/content", "", nil)
			mustStatus(t, d, http.StatusOK)
			wantType := s.ContentType
			if domain.IsText(wantType) {
				wantType += "; charset=utf-8"
			}
			if sum(d.Raw) != sum(s.Body) || d.Header.Get("Content-Type") != wantType || d.Header.Get("Content-Length") != strconv.Itoa(len(s.Body)) ||
				d.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(d.Header.Get("Content-Disposition"), "attachment;") {
				t.Errorf("%s download: sha256 equal %v, headers %v", s.Name, sum(d.Raw) == sum(s.Body), d.Header)
			}
		}
	})

	t.Run("size limit", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		id := createCase(t, c, caseBody())["id"].(string)
		exact := append(testfiles.PDF(), make([]byte, domain.MaxFileSize-len(testfiles.PDF()))...)
		r := upload(t, c, id, part{name: "file", filename: "big.pdf", body: exact}, docType)
		mustStatus(t, r, http.StatusOK)
		if r.Body["size"] != float64(domain.MaxFileSize) || r.Str("sha256") != sum(exact) {
			t.Fatalf("25 MiB upload: %s", r.Raw)
		}
		d := c.Send(http.MethodGet, "/v1/collection_cases/"+id+"/files/"+r.Str("id")+"/content", "", nil)
		if d.Status != 200 || !bytes.Equal(d.Raw, exact) {
			t.Fatalf("25 MiB download: %d, %d bytes, equal %v", d.Status, len(d.Raw), bytes.Equal(d.Raw, exact))
		}
		over := append(exact, 0)
		r = upload(t, c, id, part{name: "file", filename: "big.pdf", body: over}, docType)
		r.WantError(t, 413, "invalid_request_error", "file_too_large", "file")
		list := c.Do(http.MethodGet, "/v1/collection_cases/"+id+"/files", "")
		if n := len(list.Body["data"].([]any)); n != 1 {
			t.Errorf("%d files recorded, want 1", n)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		id := createCase(t, c, caseBody())["id"].(string)
		pdf := part{name: "file", filename: "invoice.pdf", contentType: "application/pdf", body: testfiles.PDF()}
		for _, s := range testfiles.Refused() {
			// Spoofed: named and typed as a PDF.
			r := upload(t, c, id, part{name: "file", filename: "invoice.pdf", contentType: "application/pdf", body: s.Body}, docType)
			if r.Status != 415 || r.ErrCode() != "file_type_unsupported" || r.ErrParam() != "file" {
				t.Errorf("%s sent as a PDF: %d %s", s.Name, r.Status, r.Raw)
			}
		}
		for _, tc := range []struct {
			name   string
			parts  []part
			status int
			code   string
			param  string
		}{
			{"no file", []part{docType}, 400, "parameter_missing", "file"},
			{"no document_type", []part{pdf}, 400, "parameter_missing", "document_type"},
			{"nothing", nil, 400, "parameter_missing", "file"},
			{"bad document_type", []part{pdf, {name: "document_type", body: []byte("contract")}}, 400, "parameter_invalid", "document_type"},
			{"document_type twice", []part{docType, pdf, docType}, 400, "parameter_duplicate", "document_type"},
			{"file twice", []part{pdf, pdf, docType}, 400, "parameter_duplicate", "file"},
			{"unknown part", []part{pdf, docType, {name: "purpose", body: []byte("dispute")}}, 400, "parameter_unknown", "purpose"},
			{"file as a text field", []part{{name: "file", body: testfiles.PDF()}, docType}, 400, "parameter_invalid", "file"},
			{"description too long", []part{pdf, docType, {name: "description", body: bytes.Repeat([]byte("d"), domain.MaxDescriptionLen+1)}}, 400, "parameter_invalid", "description"},
			{"description not UTF-8", []part{pdf, docType, {name: "description", body: []byte{0xff}}}, 400, "parameter_invalid", "description"},
			{"description with NUL", []part{pdf, docType, {name: "description", body: []byte("a\x00b")}}, 400, "parameter_invalid", "description"},
		} {
			r := upload(t, c, id, tc.parts...)
			if r.Status != tc.status || r.ErrCode() != tc.code || r.ErrParam() != tc.param {
				t.Errorf("%s: %d %s", tc.name, r.Status, r.Raw)
			}
		}
		r := c.Send(http.MethodPost, "/v1/collection_cases/"+id+"/files", "application/json", strings.NewReader(`{"file":"x"}`))
		if r.Status != 415 || r.ErrCode() != "unsupported_media_type" {
			t.Errorf("JSON upload: %d %s", r.Status, r.Raw)
		}
		ct, body := multipartBody(t, pdf, docType)
		r = c.Send(http.MethodPost, "/v1/collection_cases/"+id+"/files", ct, bytes.NewReader(body[:len(body)-10]))
		if r.Status != 400 || r.ErrCode() != "multipart_invalid" {
			t.Errorf("truncated body: %d %s", r.Status, r.Raw)
		}
		list := c.Do(http.MethodGet, "/v1/collection_cases/"+id+"/files", "")
		if n := len(list.Body["data"].([]any)); n != 0 {
			t.Errorf("refused uploads recorded %d files", n)
		}
		wantNotFound(t, upload(t, c, "dc_0190a0b0-0000-7000-8000-000000000000", pdf, docType))
	})

	t.Run("closed case, list and isolation", func(t *testing.T) {
		t.Parallel()
		owner := newClient(t)
		id := createCase(t, owner, caseBody())["id"].(string)
		other := createCase(t, owner, caseBody())["id"].(string)
		mustStatus(t, owner.Do(http.MethodPost, "/v1/collection_cases/"+id+"/close", `{"close_code":"uncollectible"}`), http.StatusOK)
		var fileIDs []string
		for range 3 {
			r := upload(t, owner, id, part{name: "file", filename: "a.png", body: testfiles.PNG()}, docType)
			mustStatus(t, r, http.StatusOK) // a closed case takes files
			fileIDs = append(fileIDs, r.Str("id"))
		}
		mustStatus(t, upload(t, owner, other, part{name: "file", filename: "b.png", body: testfiles.PNG()}, docType), http.StatusOK)
		ids := func(r servicetest.Response) []string {
			var out []string
			for _, d := range r.Body["data"].([]any) {
				out = append(out, d.(map[string]any)["id"].(string))
			}
			return out
		}
		base := "/v1/collection_cases/" + id + "/files"
		r := owner.Do(http.MethodGet, base+"?limit=2", "")
		if !slices.Equal(ids(r), []string{fileIDs[2], fileIDs[1]}) || r.Body["has_more"] != true || r.Body["url"] != base {
			t.Errorf("files page 1: %s", r.Raw)
		}
		r = owner.Do(http.MethodGet, base+"?limit=2&starting_after="+fileIDs[1], "")
		if !slices.Equal(ids(r), []string{fileIDs[0]}) || r.Body["has_more"] != false {
			t.Errorf("files page 2: %s", r.Raw)
		}
		r = owner.Do(http.MethodGet, base+"?limit=1&ending_before="+fileIDs[0], "")
		if !slices.Equal(ids(r), []string{fileIDs[1]}) || r.Body["has_more"] != true {
			t.Errorf("files back: %s", r.Raw)
		}
		content := base + "/" + fileIDs[0] + "/content"
		for _, stranger := range []*servicetest.Client{newClient(t), owner.Mode(true)} {
			wantNotFound(t, stranger.Do(http.MethodGet, base, ""))
			wantNotFound(t, stranger.Send(http.MethodGet, content, "", nil))
			wantNotFound(t, upload(t, stranger, id, part{name: "file", filename: "x.pdf", body: testfiles.PDF()}, docType))
		}
		// The file under another case of the same account: not found either.
		wantNotFound(t, owner.Send(http.MethodGet, "/v1/collection_cases/"+other+"/files/"+fileIDs[0]+"/content", "", nil))
		wantNotFound(t, owner.Send(http.MethodGet, base+"/file_0000000000000000000000000/content", "", nil))
		wantNotFound(t, owner.Send(http.MethodGet, base+"/not-a-file/content", "", nil))
		if d := owner.Send(http.MethodGet, content, "", nil); d.Status != 200 || sum(d.Raw) != sum(testfiles.PNG()) {
			t.Errorf("owner's download: %d", d.Status)
		}
	})
}
