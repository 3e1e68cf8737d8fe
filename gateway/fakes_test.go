package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/libs/identity"
)

// echo is what a fake service answers: everything the gateway sent it.
type echo struct {
	Service        string `json:"service"`
	Method         string `json:"method"`
	Path           string `json:"path"`
	Query          string `json:"query"`
	Account        string `json:"account"`
	Livemode       bool   `json:"livemode"`
	RequestID      string `json:"request_id"`
	IdempotencyKey string `json:"idempotency_key"`
	ContentType    string `json:"content_type"`
	Accept         string `json:"accept"`
	LastEventID    string `json:"last_event_id"`
	Authorization  string `json:"authorization"`
	Traceparent    string `json:"traceparent"`
	Forged         string `json:"forged"` // X-Forged, a header the gateway must not forward
	BodyLen        int    `json:"body_len"`
	BodySHA256     string `json:"body_sha256"`
	Chunked        bool   `json:"chunked"`
}

// fakeService is a service behind the gateway. It refuses requests whose identity signature
// does not verify, the way every real service does, and echoes the rest.
type fakeService struct {
	name   string
	srv    *httptest.Server
	signer *identity.Signer

	mu sync.Mutex
	// calls counts the requests that reached the service, by path.
	calls map[string]int
	// uploadStarted, when set, is closed once an upload's first MiB has arrived, which
	// proves the gateway streams instead of buffering the whole body first.
	uploadStarted chan struct{}
	// downloadGate, when set, holds a file download (…/content) after its first MiB until it
	// is closed, which proves the gateway passes the file on as it arrives.
	downloadGate chan struct{}
}

// downloadSize is the size of the file the fake serves at …/content.
const downloadSize = 25 << 20

// downloadByte is the fake file's byte at offset i.
func downloadByte(i int) byte { return byte(i*7 + i/1024) }

func newFakeService(t testing.TB, name string, secret []byte) *fakeService {
	t.Helper()
	signer, err := identity.NewSigner(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeService{name: name, signer: signer, calls: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeService) URL() string { return f.srv.URL }

// callsTo returns how many requests for path reached the service.
func (f *fakeService) callsTo(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func envelope(code, requestID string) map[string]any {
	return map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": code,
		"message": "from the fake " + code, "request_id": requestID}}
}

func (f *fakeService) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	id, err := f.signer.Verify(r.Header.Get, r.Method, r.URL.Path)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"type": "authentication_error", "code": "internal_identity_invalid", "message": err.Error()}})
		return
	}
	f.mu.Lock()
	f.calls[r.URL.Path]++
	f.mu.Unlock()
	w.Header().Set("X-Upstream", f.name)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Request-Id", "req_from_the_service_must_not_leak")
	switch {
	case strings.HasSuffix(r.URL.Path, "/slow"):
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(700 * time.Millisecond)
		writeJSON(w, http.StatusOK, map[string]string{"slow": "yes", "request_id": id.RequestID})
		return
	case strings.HasSuffix(r.URL.Path, "/conflict"):
		writeJSON(w, http.StatusConflict, envelope("lock_timeout", id.RequestID))
		return
	case strings.HasSuffix(r.URL.Path, "/sleep"):
		// Reading the body to its end is what lets net/http notice the gateway hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		writeJSON(w, http.StatusOK, map[string]string{"slept": "yes"})
		return
	case strings.HasSuffix(r.URL.Path, "/content"):
		f.mu.Lock()
		gate := f.downloadGate
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Content-Disposition", `attachment; filename="statement.pdf"`)
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		buf := make([]byte, 1<<20)
		for off := 0; off < downloadSize; off += len(buf) {
			for i := range buf {
				buf[i] = downloadByte(off + i)
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
			if off == 0 && gate != nil {
				w.(http.Flusher).Flush()
				select {
				case <-gate:
				case <-time.After(20 * time.Second):
					return
				}
			}
		}
		return
	case strings.HasSuffix(r.URL.Path, "/missing"):
		writeJSON(w, http.StatusNotFound, envelope("resource_missing", id.RequestID))
		return
	case strings.HasSuffix(r.URL.Path, "/not_allowed"):
		w.Header().Set("Allow", "GET")
		writeJSON(w, http.StatusMethodNotAllowed, envelope("method_not_allowed", id.RequestID))
		return
	case strings.HasSuffix(r.URL.Path, "/unavailable"):
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"type":"api_error","code":"service_unavailable","message":"busy","request_id":"`+id.RequestID+`"}}`)
		return
	}

	h := sha256.New()
	var n int
	var err2 error
	f.mu.Lock()
	started := f.uploadStarted
	f.mu.Unlock()
	if started != nil && strings.HasSuffix(r.URL.Path, "/files") {
		var m int64
		m, err2 = io.CopyN(h, r.Body, 1<<20)
		n = int(m)
		if err2 == nil {
			close(started)
			f.mu.Lock()
			f.uploadStarted = nil
			f.mu.Unlock()
		}
	}
	if err2 == nil {
		var m int64
		m, err2 = io.Copy(h, r.Body)
		n += int(m)
	}
	if err2 != nil && err2 != io.EOF {
		writeJSON(w, http.StatusBadRequest, envelope("body_unreadable", id.RequestID))
		return
	}
	writeJSON(w, http.StatusOK, echo{
		Service: f.name, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Account: id.Account, Livemode: id.Livemode, RequestID: id.RequestID, IdempotencyKey: id.IdempotencyKey,
		ContentType: r.Header.Get("Content-Type"), Accept: r.Header.Get("Accept"), LastEventID: r.Header.Get("Last-Event-ID"),
		Authorization: r.Header.Get("Authorization"), Traceparent: r.Header.Get("Traceparent"),
		Forged: r.Header.Get("X-Forged"), BodyLen: n, BodySHA256: hex.EncodeToString(h.Sum(nil)),
		Chunked: len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked",
	})
}

// closedURL returns the URL of a port nothing listens on.
func closedURL(t testing.TB) string {
	t.Helper()
	// Port 1 (tcpmux) is outside the ephemeral range and nothing here listens on it, so a
	// connection is refused every time. A port picked by listening on :0 and closing could be
	// handed to another test's server meanwhile (it was: a parallel test's gateway answered).
	return "http://127.0.0.1:1"
}
