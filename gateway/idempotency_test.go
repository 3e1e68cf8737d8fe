package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func idemHeaders(key, idem string) map[string]string {
	h := jsonHeaders(key)
	h["Idempotency-Key"] = idem
	return h
}

func TestGatewayIdempotency(t *testing.T) {
	s := startStack(t, map[string]string{"UPSTREAM_TIMEOUT": "2s", "UPLOAD_BODY_LIMIT": "4MiB"})
	key := s.createKey(t, "acct_idem", false)
	other := s.createKey(t, "acct_idem2", false)
	live := s.createKey(t, "acct_idem", true)
	webhooks := s.services["webhooks"]

	t.Run("replay is byte for byte and marked", func(t *testing.T) {
		first := do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(`{"url":"https://x","metadata":{"a":"1","b":"2"}}`),
			idemHeaders(*key.Secret, "replay-1"))
		if first.status != 200 || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
		}
		// Same parameters in another order and spacing: the same request.
		again := do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(`{ "metadata":{"b":"2","a":"1"}, "url":"https://x" }`),
			idemHeaders(*key.Secret, "replay-1"))
		if again.status != 200 || !bytes.Equal(again.body, first.body) {
			t.Fatalf("replay: %d %s\nwant %s", again.status, again.body, first.body)
		}
		if again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Original-Request") != first.header.Get("Request-Id") ||
			again.header.Get("Request-Id") == first.header.Get("Request-Id") {
			t.Fatalf("replay headers: %v (first Request-Id %s)", again.header, first.header.Get("Request-Id"))
		}
		// The service's own headers come back too.
		if again.header.Get("X-Upstream") != "webhooks" || again.header.Get("Content-Type") != first.header.Get("Content-Type") {
			t.Fatalf("replay lost the service's headers: %v", again.header)
		}
		if n := webhooks.callsTo("/v1/webhook_endpoints"); n != 1 {
			t.Fatalf("the service ran %d times, want 1", n)
		}
		var e echo
		first.json(t, &e)
		if e.IdempotencyKey != "replay-1" {
			t.Fatalf("the service saw idempotency key %q", e.IdempotencyKey)
		}
	})

	t.Run("same key, another request", func(t *testing.T) {
		do(t, "POST", s.public+"/v1/webhook_endpoints/we_1", strings.NewReader(`{"description":"a"}`), idemHeaders(*key.Secret, "reuse-1"))
		for _, tc := range []struct{ method, path, body string }{
			{"POST", "/v1/webhook_endpoints/we_1", `{"description":"b"}`},
			{"POST", "/v1/webhook_endpoints/we_2", `{"description":"a"}`},
			{"POST", "/v1/webhook_endpoints/we_1?expand[]=x", `{"description":"a"}`},
			{"POST", "/v1/webhook_endpoints/we_1", `{"description":"a","metadata":{}}`},
		} {
			r := do(t, tc.method, s.public+tc.path, strings.NewReader(tc.body), idemHeaders(*key.Secret, "reuse-1"))
			e := r.expectError(t, 400, "idempotency_error", "idempotency_key_reused")
			if e.Error.Param != "Idempotency-Key" {
				t.Fatalf("param = %q", e.Error.Param)
			}
		}
		if n := webhooks.callsTo("/v1/webhook_endpoints/we_2"); n != 0 {
			t.Fatalf("a refused reuse reached the service (%d)", n)
		}
	})

	t.Run("scope is account, mode and key", func(t *testing.T) {
		path := "/v1/webhook_endpoints/we_scope"
		for _, k := range []apiKey{key, other, live} {
			r := do(t, "POST", s.public+path, strings.NewReader(`{}`), idemHeaders(*k.Secret, "scope-1"))
			if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%s: %d %v", k.ID, r.status, r.header)
			}
		}
		if n := webhooks.callsTo(path); n != 3 {
			t.Fatalf("service ran %d times, want 3 (one per account and mode)", n)
		}
	})

	t.Run("concurrent requests with one key: one runs, the other 409", func(t *testing.T) {
		path := "/v1/webhook_endpoints/we_1/slow"
		var wg sync.WaitGroup
		var first response
		wg.Add(1)
		go func() {
			defer wg.Done()
			first = do(t, "POST", s.public+path, strings.NewReader(`{}`), idemHeaders(*key.Secret, "conc-1"))
		}()
		waitFor(t, func() bool { return webhooks.callsTo(path) == 1 })
		r := do(t, "POST", s.public+path, strings.NewReader(`{}`), idemHeaders(*key.Secret, "conc-1"))
		r.expectError(t, 409, "idempotency_error", "idempotency_key_in_use")
		// While it runs, a different request with the key is a reuse, not a wait.
		r = do(t, "POST", s.public+path, strings.NewReader(`{"x":1}`), idemHeaders(*key.Secret, "conc-1"))
		r.expectError(t, 400, "idempotency_error", "idempotency_key_reused")
		wg.Wait()
		if first.status != 200 {
			t.Fatalf("first: %d %s", first.status, first.body)
		}
		after := do(t, "POST", s.public+path, strings.NewReader(`{}`), idemHeaders(*key.Secret, "conc-1"))
		if after.status != 200 || !bytes.Equal(after.body, first.body) || after.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("after: %d %s", after.status, after.body)
		}
		if n := webhooks.callsTo(path); n != 1 {
			t.Fatalf("service ran %d times, want 1", n)
		}
	})

	t.Run("answers that are not kept", func(t *testing.T) {
		for _, path := range []string{"/v1/webhook_endpoints/we_1/unavailable", "/v1/webhook_endpoints/we_1/conflict"} {
			for i := 0; i < 2; i++ {
				r := do(t, "POST", s.public+path, strings.NewReader(`{}`), idemHeaders(*key.Secret, "notkept"+path))
				if r.status < 409 || r.header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("%s try %d: %d %v", path, i, r.status, r.header)
				}
			}
			if n := webhooks.callsTo(path); n != 2 {
				t.Fatalf("%s: service ran %d times, want 2 (the answer is not kept)", path, n)
			}
		}
		// Error answers the service decided are kept like any other. The replayed error body
		// is the first one, so its request_id is the original request's (Original-Request),
		// not the replay's Request-Id.
		first := do(t, "POST", s.public+"/v1/webhook_endpoints/we_1/missing", strings.NewReader(`{}`), idemHeaders(*key.Secret, "kept-404"))
		first.expectError(t, 404, "invalid_request_error", "resource_missing")
		again := doUnchecked(t, "POST", s.public+"/v1/webhook_endpoints/we_1/missing", `{}`, idemHeaders(*key.Secret, "kept-404"))
		if again.status != 404 || !bytes.Equal(again.body, first.body) || again.header.Get("Original-Request") != first.header.Get("Request-Id") {
			t.Fatalf("replayed 404: %d %v %s", again.status, again.header, again.body)
		}
		if n := webhooks.callsTo("/v1/webhook_endpoints/we_1/missing"); n != 1 {
			t.Fatalf("a 404 was not kept: service ran %d times", n)
		}
	})

	t.Run("GET and DELETE are not stored", func(t *testing.T) {
		for _, m := range []string{"GET", "DELETE"} {
			for i := 0; i < 2; i++ {
				r := do(t, m, s.public+"/v1/webhook_endpoints/we_get", nil, idemHeaders(*key.Secret, "get-1"))
				if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("%s: %d %v", m, r.status, r.header)
				}
			}
		}
		if n := webhooks.callsTo("/v1/webhook_endpoints/we_get"); n != 4 {
			t.Fatalf("service ran %d times, want 4", n)
		}
	})

	t.Run("header validation", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			values []string
		}{
			{"empty", []string{""}},
			{"too long", []string{strings.Repeat("k", 256)}},
			{"not ASCII", []string{"clé"}},
			{"two headers", []string{"a", "b"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := http.Header{"Authorization": {"Bearer " + *key.Secret}, "Content-Type": {"application/json"}, "Idempotency-Key": tc.values}
				r := doHeader(t, "POST", s.public+"/v1/webhook_endpoints", `{}`, h)
				e := r.errBody(t)
				if r.status != 400 || e.Error.Type != "invalid_request_error" || e.Error.Code != "parameter_invalid" || e.Error.Param != "Idempotency-Key" {
					t.Fatalf("%d %s", r.status, r.body)
				}
			})
		}
		r := do(t, "POST", s.public+"/v1/webhook_endpoints/we_max", strings.NewReader(`{}`), idemHeaders(*key.Secret, strings.Repeat("k", 255)))
		if r.status != 200 {
			t.Fatalf("255-character key: %d %s", r.status, r.body)
		}
	})

	t.Run("uploads: fingerprint of the parts, whatever the boundary", func(t *testing.T) {
		path := "/v1/collection_cases/dc_1/files"
		file := bytes.Repeat([]byte("lease page "), 200_000) // ~2 MiB: streamed
		b1, ct1 := multipartBody(t, file)
		h := map[string]string{"Authorization": "Bearer " + *key.Secret, "Content-Type": ct1, "Idempotency-Key": "upload-1"}
		first := do(t, "POST", s.public+path, bytes.NewReader(b1), h)
		if first.status != 200 {
			t.Fatalf("first upload: %d %s", first.status, first.body)
		}
		b2, ct2 := multipartBody(t, file)
		if ct1 == ct2 {
			t.Fatal("same boundary twice")
		}
		h["Content-Type"] = ct2
		again := do(t, "POST", s.public+path, bytes.NewReader(b2), h)
		if again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retried upload: %d %v %s", again.status, again.header, again.body)
		}
		b3, ct3 := multipartBody(t, append(file, '!'))
		h["Content-Type"] = ct3
		do(t, "POST", s.public+path, bytes.NewReader(b3), h).expectError(t, 400, "idempotency_error", "idempotency_key_reused")
		if n := s.services["collections"].callsTo(path); n != 1 {
			t.Fatalf("service got %d uploads, want 1", n)
		}
	})

	t.Run("a crashed gateway's lock expires", func(t *testing.T) {
		// What a gateway leaves behind when it dies mid-request: the lock, with the lock TTL
		// it set (here shortened). The key is refused until the lock expires, then usable.
		opts, err := goredis.ParseURL(s.redis)
		if err != nil {
			t.Fatal(err)
		}
		rdb := goredis.NewClient(opts)
		defer rdb.Close()
		sum := sha256.Sum256([]byte("crash-1"))
		redisKey := "gw:idemlock:acct_idem:test:" + hex.EncodeToString(sum[:])
		if err := rdb.Set(context.Background(), redisKey, strings.Repeat("0", 32), 1500*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		do(t, "POST", s.public+"/v1/webhook_endpoints/we_crash", strings.NewReader(`{}`), idemHeaders(*key.Secret, "crash-1")).
			expectError(t, 409, "idempotency_error", "idempotency_key_in_use")
		time.Sleep(1600 * time.Millisecond)
		r := do(t, "POST", s.public+"/v1/webhook_endpoints/we_crash", strings.NewReader(`{}`), idemHeaders(*key.Secret, "crash-1"))
		if r.status != 200 || webhooks.callsTo("/v1/webhook_endpoints/we_crash") != 1 {
			t.Fatalf("after the lock TTL: %d %s", r.status, r.body)
		}
	})
}

// TestGatewayIdempotencyUpstreamDown: the gateway's own 502 is not stored, so a retry with
// the same key runs again once the service is back.
func TestGatewayIdempotencyUpstreamDown(t *testing.T) {
	s := startStack(t, map[string]string{"WEBHOOKS_URL": closedURL(t)})
	key := s.createKey(t, "acct_down", false)
	for i := 0; i < 2; i++ {
		r := do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(`{}`), idemHeaders(*key.Secret, "down-1"))
		r.expectError(t, 502, "api_error", "upstream_unavailable")
	}
}

// TestGatewayRedisDown: rate limits fail open (the request runs, without RateLimit headers);
// a request with an Idempotency-Key fails closed with 503, because running it could apply a
// retry twice.
func TestGatewayRedisDown(t *testing.T) {
	s := startStack(t, map[string]string{"REDIS_URL": "redis://" + strings.TrimPrefix(closedURL(t), "http://") + "/0",
		"GATEWAY_RATE_LIMIT_TEST": "1", "GATEWAY_AUTH_FAILURE_LIMIT": "1"})
	key := s.createKey(t, "acct_noredis", false)
	for i := 0; i < 3; i++ {
		r := do(t, "GET", s.public+"/v1/webhook_endpoints", nil, bearer(*key.Secret))
		if r.status != 200 || r.header.Get("RateLimit-Limit") != "" {
			t.Fatalf("without an idempotency key: %d %v, want 200 without rate-limit headers", r.status, r.header)
		}
		do(t, "GET", s.public+"/v1/webhook_endpoints", nil, bearer("sk_test_"+strings.Repeat("x", 43))).
			expectError(t, 401, "authentication_error", "api_key_invalid")
	}
	r := do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(`{}`), idemHeaders(*key.Secret, "noredis-1"))
	r.expectError(t, 503, "api_error", "service_unavailable")
	if n := s.services["webhooks"].callsTo("/v1/webhook_endpoints"); n != 3 {
		t.Fatalf("service calls = %d, want 3 (the idempotent POST must not run)", n)
	}
	r = do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(`{}`), jsonHeaders(*key.Secret))
	if r.status != 200 {
		t.Fatalf("POST without a key: %d", r.status)
	}
}

// doUnchecked sends a request without do's checks on the Request-Id (a replayed error body
// carries the original request's id).
func doUnchecked(t *testing.T, method, url, body string, header map[string]string) response {
	t.Helper()
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	return doHeader(t, method, url, body, h)
}

func doHeader(t *testing.T, method, url, body string, h http.Header) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
