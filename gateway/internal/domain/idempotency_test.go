package domain_test

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
)

func TestValidateIdempotencyKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		ok   bool
	}{
		{"one char", "a", true},
		{"uuid", "5f0c6d4e-9a3b-4c1e-8f7a-2b6d9e0c1a3f", true},
		{"printable punctuation and space", `order 42: {"retry"} ~!@#$%^&*()`, true},
		{"255 chars", strings.Repeat("k", 255), true},
		{"empty", "", false},
		{"256 chars", strings.Repeat("k", 256), false},
		{"tab", "a\tb", false},
		{"newline", "a\nb", false},
		{"NUL", "a\x00b", false},
		{"DEL", "a\x7fb", false},
		{"non-ASCII", "clé", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := domain.ValidateIdempotencyKey(tc.key)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateIdempotencyKey(%q) = %v, want ok=%v", tc.key, err, tc.ok)
			}
			if err != nil {
				if de, ok := err.(*domainerr.Error); !ok || de.Kind != domainerr.Invalid || de.Param != "Idempotency-Key" {
					t.Fatalf("error = %#v, want KindInvalid naming the header", err)
				}
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	base := domain.Fingerprint("POST", "/v1/webhook_endpoints", nil, []byte(`{"url":"https://x","enabled_events":["*"],"metadata":{"a":"1","b":"2"}}`))
	for _, tc := range []struct {
		name   string
		method string
		path   string
		query  string
		body   string
		same   bool
	}{
		{"identical", "POST", "/v1/webhook_endpoints", "", `{"url":"https://x","enabled_events":["*"],"metadata":{"a":"1","b":"2"}}`, true},
		{"keys reordered, nested too", "POST", "/v1/webhook_endpoints", "", `{"metadata":{"b":"2","a":"1"},"enabled_events":["*"],"url":"https://x"}`, true},
		{"whitespace", "POST", "/v1/webhook_endpoints", "", "{ \"url\" : \"https://x\",\n \"enabled_events\":[ \"*\" ],\"metadata\":{\"a\":\"1\",\"b\":\"2\"} }\n", true},
		{"escaped the same string", "POST", "/v1/webhook_endpoints", "", `{"url":"https:\/\/x","enabled_events":["\u002a"],"metadata":{"a":"1","b":"2"}}`, true},
		{"other value", "POST", "/v1/webhook_endpoints", "", `{"url":"https://y","enabled_events":["*"],"metadata":{"a":"1","b":"2"}}`, false},
		{"array order matters", "POST", "/v1/webhook_endpoints", "", `{"url":"https://x","enabled_events":["*"],"metadata":{"a":"1","b":"2"},"x":[1,2]}`, false},
		{"extra parameter", "POST", "/v1/webhook_endpoints", "", `{"url":"https://x","enabled_events":["*"],"metadata":{"a":"1","b":"2"},"description":null}`, false},
		{"other path", "POST", "/v1/webhook_endpoints/we_1", "", `{"url":"https://x","enabled_events":["*"],"metadata":{"a":"1","b":"2"}}`, false},
		{"other method", "DELETE", "/v1/webhook_endpoints", "", `{"url":"https://x","enabled_events":["*"],"metadata":{"a":"1","b":"2"}}`, false},
		{"query added", "POST", "/v1/webhook_endpoints", "expand[]=x", `{"url":"https://x","enabled_events":["*"],"metadata":{"a":"1","b":"2"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := domain.Fingerprint(tc.method, tc.path, []byte(tc.query), []byte(tc.body))
			if (got == base) != tc.same {
				t.Fatalf("same fingerprint = %v, want %v", got == base, tc.same)
			}
		})
	}

	t.Run("query order does not matter", func(t *testing.T) {
		a := domain.Fingerprint("POST", "/v1/x", []byte("a=1&b=2"), nil)
		b := domain.Fingerprint("POST", "/v1/x", []byte("b=2&a=1"), nil)
		if a != b {
			t.Fatal("query parameter order changed the fingerprint")
		}
	})
	t.Run("numbers keep their literal", func(t *testing.T) {
		a := domain.Fingerprint("POST", "/v1/x", nil, []byte(`{"amount":12345678901234567890}`))
		b := domain.Fingerprint("POST", "/v1/x", nil, []byte(`{"amount":12345678901234567891}`))
		if a == b {
			t.Fatal("large integers differing in the last digit fingerprint the same (float rounding)")
		}
	})
	t.Run("not JSON counts byte for byte", func(t *testing.T) {
		a := domain.Fingerprint("POST", "/v1/x", nil, []byte(`{"a":1`))
		b := domain.Fingerprint("POST", "/v1/x", nil, []byte(`{"a":1 `))
		c := domain.Fingerprint("POST", "/v1/x", nil, []byte(`{"a":1`))
		if a == b || a != c {
			t.Fatalf("raw bodies: a==b %v, a==c %v; want false, true", a == b, a == c)
		}
		if domain.Fingerprint("POST", "/v1/x", nil, []byte(`{"a":1}{"b":2}`)) == domain.Fingerprint("POST", "/v1/x", nil, []byte(`{"a":1}`)) {
			t.Fatal("trailing data after the JSON value was ignored")
		}
	})
	t.Run("empty and whitespace bodies are the same", func(t *testing.T) {
		if domain.Fingerprint("POST", "/v1/x", nil, nil) != domain.Fingerprint("POST", "/v1/x", nil, []byte(" \n")) {
			t.Fatal("an empty body and a blank one differ")
		}
	})
}

// multipartUpload builds an upload of file with a boundary the writer picks at random.
func multipartUpload(t *testing.T, file string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("purpose", "evidence")
	fw, err := w.CreateFormFile("file", "lease.pdf")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(file))
	_ = w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func uploadFP(body []byte, ct string, chunk int) string {
	f := domain.NewUploadFingerprint("POST", "/v1/collection_cases/dc_1/files", nil, ct)
	for len(body) > 0 {
		n := min(chunk, len(body))
		_, _ = f.Write(body[:n])
		body = body[n:]
	}
	return f.Sum()
}

func TestUploadFingerprint(t *testing.T) {
	file := strings.Repeat("%PDF-1.7 lease contents ", 2000)
	a, ctA := multipartUpload(t, file)
	b, ctB := multipartUpload(t, file)
	if ctA == ctB {
		t.Fatal("the two uploads share a boundary; the test needs different ones")
	}
	fa := uploadFP(a, ctA, 1<<20)
	// Any chunking, including one that splits the boundary, gives the same fingerprint.
	for _, chunk := range []int{1, 7, 61, 4096} {
		if got := uploadFP(a, ctA, chunk); got != fa {
			t.Fatalf("chunks of %d bytes changed the fingerprint", chunk)
		}
	}
	if uploadFP(b, ctB, 333) != fa {
		t.Fatal("the same upload with another boundary has another fingerprint")
	}
	c, ctC := multipartUpload(t, file+"!")
	if uploadFP(c, ctC, 4096) == fa {
		t.Fatal("a different file has the same fingerprint")
	}
	if uploadFP(a, "application/octet-stream", 4096) == fa {
		t.Fatal("the media type is not part of the fingerprint")
	}
}

func TestResponseStorable(t *testing.T) {
	for status, want := range map[int]bool{200: true, 201: true, 400: true, 404: true, 500: true, 409: false, 429: false, 503: false} {
		if got := domain.ResponseStorable(status); got != want {
			t.Errorf("ResponseStorable(%d) = %v, want %v", status, got, want)
		}
	}
}
