package api

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDoSendsTheKeyAndIdempotencyKeyAndReadsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.Header.Get("Authorization") != "Bearer sk_test_k":
			w.WriteHeader(401)
		case r.URL.Path == "/v1/bad":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"url_not_https","message":"The url must use https.","param":"url","request_id":"req_1"}}`)
		case r.URL.Path == "/v1/plain":
			w.WriteHeader(502)
			io.WriteString(w, "bad gateway\n")
		default:
			io.WriteString(w, `{"method":"`+r.Method+`","idem":"`+r.Header.Get("Idempotency-Key")+`","ct":"`+r.Header.Get("Content-Type")+`","body":`+string(b)+`}`)
		}
	}))
	defer srv.Close()
	c := &Client{Base: srv.URL, Key: "sk_test_k", Agent: "test"}
	ctx := t.Context()

	res, err := c.Do(ctx, "POST", "/v1/ok", []byte(`{"a":1}`), "k1")
	if err != nil || string(res.Body) != `{"method":"POST","idem":"k1","ct":"application/json","body":{"a":1}}` {
		t.Fatalf("POST: %v %s", err, res.Body)
	}
	_, err = c.Do(ctx, "GET", "/v1/bad", nil, "")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != "url" ||
		err.Error() != "400 invalid_request_error (url_not_https): The url must use https. [param url] [request req_1]" {
		t.Fatalf("an error envelope: %v", err)
	}
	if _, err = c.Do(ctx, "GET", "/v1/plain", nil, ""); !errors.As(err, &ae) || ae.Status != 502 || !strings.Contains(err.Error(), "bad gateway") {
		t.Fatalf("an answer without the envelope: %v", err)
	}
	if _, err := (&Client{Base: srv.URL, Key: "sk_test_other"}).Do(ctx, "GET", "/v1/ok", nil, ""); !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("another key: %v", err)
	}
	if _, err := c.Do(ctx, "GET", "v1/ok", nil, ""); err == nil || !strings.Contains(err.Error(), "starting with /") {
		t.Fatalf("a path without /: %v", err)
	}
	if _, err := (&Client{Base: "127.0.0.1:8080", Key: "k"}).Do(ctx, "GET", "/v1/ok", nil, ""); err == nil || !strings.Contains(err.Error(), "API base") {
		t.Fatalf("a base without a scheme: %v", err)
	}
	if k1, k2 := NewIdempotencyKey(), NewIdempotencyKey(); k1 == k2 || !strings.HasPrefix(k1, "cli_") || len(k1) != 36 {
		t.Fatalf("idempotency keys %q %q", k1, k2)
	}
}
