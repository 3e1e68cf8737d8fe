package main

import (
	"bufio"
	"io"
	"net/http"
	"testing"
	"time"
)

// A file download (GET /v1/collection_cases/:id/files/:file_id/content, up to 25 MiB) is
// passed on as it arrives, never held whole in the gateway: the client has the first MiB
// while the service still holds back the rest, and then the whole file, byte for byte, with
// the service's headers.
func TestFileDownloadIsStreamed(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	key := s.createKey(t, "acct_dl", false)
	svc := s.services["collections"]
	gate := make(chan struct{})
	svc.mu.Lock()
	svc.downloadGate = gate
	svc.mu.Unlock()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()

	req, err := http.NewRequest("GET", s.public+"/v1/collection_cases/dc_1/files/file_1/content", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+*key.Secret)
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := httpClient.Do(req)
		got <- answer{resp, err}
	}()
	var resp *http.Response
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatal(a.err)
		}
		resp = a.resp
	case <-time.After(15 * time.Second):
		t.Fatal("no answer while the service holds back all but the first MiB: the gateway buffers the file")
	}
	defer resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 200 || h.Get("Content-Type") != "application/pdf" || h.Get("Content-Disposition") != `attachment; filename="statement.pdf"` ||
		resp.ContentLength != downloadSize || h.Get("Request-Id") == "req_from_the_service_must_not_leak" || h.Get("Request-Id") == "" ||
		h.Get("X-Upstream") != "collections" {
		t.Fatalf("%d %v (length %d)", resp.StatusCode, h, resp.ContentLength)
	}
	br := bufio.NewReader(resp.Body)
	first := make([]byte, 1<<20)
	if _, err := io.ReadFull(br, first); err != nil {
		t.Fatalf("first MiB: %v", err)
	}
	close(gate)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	body := append(first, rest...)
	if len(body) != downloadSize {
		t.Fatalf("%d bytes, want %d", len(body), downloadSize)
	}
	for i, b := range body {
		if b != downloadByte(i) {
			t.Fatalf("byte %d is %d, want %d", i, b, downloadByte(i))
		}
	}
}
