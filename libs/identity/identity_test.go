package identity

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

var secret = []byte(strings.Repeat("s", 32))

func signed(t *testing.T, s *Signer, id Identity, method, path string) http.Header {
	t.Helper()
	h := http.Header{}
	s.Sign(h.Set, id, method, path)
	return h
}

func TestRoundTrip(t *testing.T) {
	s, err := NewSigner(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{Account: "acct_a", Livemode: true, RequestID: "req_1", IdempotencyKey: "k-1"}
	h := signed(t, s, want, "POST", "/v1/webhook_endpoints")
	got, err := s.Verify(h.Get, "POST", "/v1/webhook_endpoints")
	if err != nil || got != want {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, want)
	}
}

func TestVerifyRefuses(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, _ := NewSigner(secret, func() time.Time { return now })
	other, _ := NewSigner([]byte(strings.Repeat("o", 32)), func() time.Time { return now })
	id := Identity{Account: "acct_a", RequestID: "req_1"}
	good := func() http.Header { return signed(t, s, id, "GET", "/v1/x") }

	for _, tc := range []struct {
		name   string
		header func() http.Header
		method string
		path   string
		want   error
	}{
		{"no headers", func() http.Header { return http.Header{} }, "GET", "/v1/x", ErrMissing},
		{"other secret", func() http.Header { return signed(t, other, id, "GET", "/v1/x") }, "GET", "/v1/x", ErrSignature},
		{"other path", good, "GET", "/v1/y", ErrSignature},
		{"other method", good, "DELETE", "/v1/x", ErrSignature},
		{"account swapped", func() http.Header { h := good(); h.Set(HeaderAccount, "acct_b"); return h }, "GET", "/v1/x", ErrSignature},
		{"mode flipped", func() http.Header { h := good(); h.Set(HeaderLivemode, "true"); return h }, "GET", "/v1/x", ErrSignature},
		{"mode garbage", func() http.Header { h := good(); h.Set(HeaderLivemode, "yes"); return h }, "GET", "/v1/x", ErrSignature},
		{"idempotency key added", func() http.Header { h := good(); h.Set(HeaderIdempotencyKey, "k"); return h }, "GET", "/v1/x", ErrSignature},
		{"bad scheme", func() http.Header { h := good(); h.Set(HeaderSignature, "v2="+h.Get(HeaderSignature)[3:]); return h }, "GET", "/v1/x", ErrSignature},
		{"not hex", func() http.Header { h := good(); h.Set(HeaderSignature, "v1=zz"); return h }, "GET", "/v1/x", ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Verify(tc.header().Get, tc.method, tc.path)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyRefusesStaleAndFuture(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	signer, _ := NewSigner(secret, func() time.Time { return at })
	h := signed(t, signer, Identity{Account: "acct_a"}, "GET", "/")
	for _, skew := range []time.Duration{MaxSkew + time.Second, -MaxSkew - time.Second} {
		verifier, _ := NewSigner(secret, func() time.Time { return at.Add(skew) })
		if _, err := verifier.Verify(h.Get, "GET", "/"); !errors.Is(err, ErrExpired) {
			t.Errorf("skew %v: err = %v, want ErrExpired", skew, err)
		}
	}
	verifier, _ := NewSigner(secret, func() time.Time { return at.Add(MaxSkew - time.Second) })
	if _, err := verifier.Verify(h.Get, "GET", "/"); err != nil {
		t.Errorf("within skew: %v", err)
	}
}

func TestShortSecret(t *testing.T) {
	if _, err := NewSigner([]byte("short"), nil); err == nil {
		t.Fatal("short secret accepted")
	}
}

func BenchmarkSignVerify(b *testing.B) {
	s, _ := NewSigner(secret, nil)
	id := Identity{Account: "acct_a", RequestID: "req_1"}
	h := http.Header{}
	for i := 0; i < b.N; i++ {
		s.Sign(h.Set, id, "GET", "/v1/webhook_endpoints/we_1")
		if _, err := s.Verify(h.Get, "GET", "/v1/webhook_endpoints/we_1"); err != nil {
			b.Fatal(err)
		}
	}
}
