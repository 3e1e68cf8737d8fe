package webhookhttp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"120":                            2 * time.Minute,
		" 0 ":                            0,
		"Sun, 01 Nov 2026 12:00:30 GMT":  30 * time.Second,
		"Sunday, 01-Nov-26 12:01:00 GMT": time.Minute,
		"Sun Nov  1 12:00:05 2026":       5 * time.Second,
		"Sun, 01 Nov 2026 11:00:00 GMT":  0, // in the past: now
		"99999999999999":                 (1 << 32) * time.Second,
	} {
		if got, ok := ParseRetryAfter(in, now); !ok || got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.5", "soon", "2026-11-01T12:00:00Z", "120s"} {
		if got, ok := ParseRetryAfter(bad, now); ok {
			t.Errorf("ParseRetryAfter(%q) = %v, want not parsed", bad, got)
		}
	}
}

// verify checks a delivery the way the Standard Webhooks specification tells a receiver to,
// written from the specification rather than from this package: decode the base64 key after
// whsec_, HMAC-SHA256 "{webhook-id}.{webhook-timestamp}.{body}", and accept if any of the
// space-separated v1 signatures matches.
func verify(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Split(h.Get("webhook-signature"), " ") {
		version, b64, ok := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && version == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB = "whsec_dGhlIG90aGVyIGtleSBvZiB0aGUgZW5kcG9pbnQ="
)

func TestSendSignsAndReports(t *testing.T) {
	var got http.Header
	var body []byte
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	s := newSender(t, Config{Timeout: 5 * time.Second, AllowPrivate: true, TLSInsecure: true})
	ts := time.Unix(1_800_000_000, 0)
	res := s.Send(context.Background(), app.Request{URL: srv.URL + "/hook", MessageID: "evt_1", Timestamp: ts,
		Body: []byte(`{"id":"evt_1"}`), Secrets: []string{secretA, secretB}})
	if res.Status != 503 || res.ErrorCode != "" || res.Cause != nil || res.RetryAfter == nil || *res.RetryAfter != 3*time.Second || !res.At.Equal(ts) {
		t.Fatalf("result %+v", res)
	}
	if got.Get("webhook-id") != "evt_1" || got.Get("webhook-timestamp") != "1800000000" ||
		got.Get("Content-Type") != "application/json" || got.Get("User-Agent") != "RentalPlatform-Webhooks/1.0" ||
		string(body) != `{"id":"evt_1"}` {
		t.Fatalf("request headers %v body %s", got, body)
	}
	sigs := strings.Split(got.Get("webhook-signature"), " ")
	if len(sigs) != 2 {
		t.Fatalf("signature header %q: want two", got.Get("webhook-signature"))
	}
	for _, secret := range []string{secretA, secretB} {
		if !verify(secret, got, body) {
			t.Errorf("a receiver holding %s rejects the delivery", secret)
		}
	}
	if verify("whsec_"+base64.StdEncoding.EncodeToString([]byte("wrong key")), got, body) {
		t.Error("a wrong key verifies")
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	var followed atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	res := newSender(t, Config{Timeout: 5 * time.Second, AllowPrivate: true, TLSInsecure: true}).
		Send(context.Background(), app.Request{URL: srv.URL, MessageID: "evt_1", Timestamp: time.Now(), Secrets: []string{secretA}})
	if res.Status != 307 || followed.Load() {
		t.Fatalf("result %+v, followed %v", res, followed.Load())
	}
}

func TestGuardRefusesInternalAddresses(t *testing.T) {
	var hit atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Store(true) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	s := newSender(t, Config{Timeout: 2 * time.Second, TLSInsecure: true})
	for _, u := range []string{srv.URL, "https://localhost" + port, "https://[::ffff:127.0.0.1]" + port} {
		res := s.Send(context.Background(), app.Request{URL: u, MessageID: "evt_1", Timestamp: time.Now(), Secrets: []string{secretA}})
		if res.Status != 0 || res.ErrorCode != domain.AttemptAddressNotAllowed {
			t.Errorf("%s: %+v", u, res)
		}
	}
	if hit.Load() {
		t.Fatal("the guarded sender reached a loopback receiver")
	}
}
