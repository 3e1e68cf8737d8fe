package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
)

// TestDashboard: the dashboard serves its UI and the queues' API from the platform's Redis,
// answers /healthz (the image's HEALTHCHECK), refuses changes while read-only (the default),
// and stops when its context ends.
func TestDashboard(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly string // ASYNQMON_READ_ONLY; "" leaves the default
		wantDel  int
	}{
		{"read-only by default", "", http.StatusMethodNotAllowed},
		{"writable when told", "false", http.StatusNotFound}, // no such queue: but asked
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := map[string]string{"ASYNQMON_ADDR": "127.0.0.1:0", "REDIS_URL": testkit.Redis(t), "ASYNQMON_READ_ONLY": tc.readOnly}
			ctx, cancel := context.WithCancel(t.Context())
			addr := make(chan string, 1)
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, func(k string) string { return settings[k] }, io.Discard, func(a string) { addr <- a })
			}()
			var base string
			select {
			case a := <-addr:
				base = "http://" + a
			case err := <-done:
				t.Fatalf("run: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("not listening after 10s")
			}
			for path, want := range map[string]string{"/healthz": `"ok"`, "/": "<html", "/api/queues": `"queues"`} {
				code, body := do(t, http.MethodGet, base+path)
				if code != http.StatusOK || !strings.Contains(body, want) {
					t.Errorf("GET %s: %d %.200s", path, code, body)
				}
			}
			if code, body := do(t, http.MethodDelete, base+"/api/queues/events"); code != tc.wantDel {
				t.Errorf("DELETE a queue: %d %s, want %d", code, body, tc.wantDel)
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("run after its context ended: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("did not stop within 15s")
			}
		})
	}
}

func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
