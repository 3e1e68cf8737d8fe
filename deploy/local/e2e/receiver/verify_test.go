package receiver

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks specification's published test vector (the reference libraries'
// tests, reproduced by Svix and many receivers).
const (
	vecSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTimestamp = "1614265330"
	vecBody      = `{"test": 2432232314}`
	vecSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vecTime = time.Unix(1614265330, 0)

func vecHeader(sig string) http.Header {
	h := http.Header{}
	h.Set(HeaderID, vecID)
	h.Set(HeaderTimestamp, vecTimestamp)
	h.Set(HeaderSignature, sig)
	return h
}

func vecVerifier(t *testing.T, secrets ...string) *Verifier {
	t.Helper()
	v, err := NewVerifier(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	v.Now = func() time.Time { return vecTime }
	return v
}

func TestSignReproducesThePublishedVector(t *testing.T) {
	got, err := Sign(vecSecret, vecID, vecTimestamp, []byte(vecBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != vecSignature {
		t.Fatalf("Sign = %s, want %s", got, vecSignature)
	}
	// The prefix is optional, as in the reference libraries.
	got, err = Sign(strings.TrimPrefix(vecSecret, "whsec_"), vecID, vecTimestamp, []byte(vecBody))
	if err != nil || got != vecSignature {
		t.Fatalf("without prefix: %s %v", got, err)
	}
}

func TestVerifyThePublishedVector(t *testing.T) {
	v := vecVerifier(t, vecSecret)
	if err := v.Verify(vecHeader(vecSignature), []byte(vecBody)); err != nil {
		t.Fatalf("published vector refused: %v", err)
	}
	// Within the tolerance either side.
	for _, d := range []time.Duration{-5 * time.Minute, 5 * time.Minute} {
		v.Now = func() time.Time { return vecTime.Add(d) }
		if err := v.Verify(vecHeader(vecSignature), []byte(vecBody)); err != nil {
			t.Fatalf("now %+v: %v", d, err)
		}
	}
}

func TestVerifyAnyEntryMatches(t *testing.T) {
	v := vecVerifier(t, vecSecret)
	other, _ := Sign("whsec_"+"c2VjcmV0LW9mLWFub3RoZXItZW5kcG9pbnQ=", vecID, vecTimestamp, []byte(vecBody))
	for _, header := range []string{
		other + " " + vecSignature,
		"v1a,c29tZXRoaW5nIGFzeW1tZXRyaWM= " + vecSignature,
		"garbage " + vecSignature,
		vecSignature + "  v1,bm9wZQ==",
	} {
		if err := v.Verify(vecHeader(header), []byte(vecBody)); err != nil {
			t.Errorf("%q: %v", header, err)
		}
	}
	// Two header lines count like one space-separated list.
	h := vecHeader(other)
	h.Add(HeaderSignature, vecSignature)
	if err := v.Verify(h, []byte(vecBody)); err != nil {
		t.Errorf("two header lines: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	v := vecVerifier(t, vecSecret)
	wrongKey, _ := Sign("whsec_"+"c2VjcmV0LW9mLWFub3RoZXItZW5kcG9pbnQ=", vecID, vecTimestamp, []byte(vecBody))
	cases := []struct {
		name string
		h    http.Header
		body string
		now  time.Time
		want error
	}{
		{"tampered body", vecHeader(vecSignature), `{"test": 2432232315}`, vecTime, ErrNoMatchingSignature},
		{"body with a trailing newline", vecHeader(vecSignature), vecBody + "\n", vecTime, ErrNoMatchingSignature},
		{"other id", func() http.Header { h := vecHeader(vecSignature); h.Set(HeaderID, "msg_other"); return h }(), vecBody, vecTime, ErrNoMatchingSignature},
		{"other timestamp", func() http.Header { h := vecHeader(vecSignature); h.Set(HeaderTimestamp, "1614265331"); return h }(), vecBody, time.Unix(1614265331, 0), ErrNoMatchingSignature},
		{"wrong secret", vecHeader(wrongKey), vecBody, vecTime, ErrNoMatchingSignature},
		{"version not v1", vecHeader(strings.Replace(vecSignature, "v1,", "v2,", 1)), vecBody, vecTime, ErrNoMatchingSignature},
		{"signature without version", vecHeader(strings.TrimPrefix(vecSignature, "v1,")), vecBody, vecTime, ErrNoMatchingSignature},
		{"hex instead of base64", vecHeader("v1,83484cf52b04f8e4cf2531adfed9882ad4b2665137b852442d594d20e2c9d4e1"), vecBody, vecTime, ErrNoMatchingSignature},
		{"too old", vecHeader(vecSignature), vecBody, vecTime.Add(5*time.Minute + time.Second), ErrTimestampTooOld},
		{"too new", vecHeader(vecSignature), vecBody, vecTime.Add(-5*time.Minute - time.Second), ErrTimestampTooNew},
		{"timestamp in milliseconds", func() http.Header { h := vecHeader(vecSignature); h.Set(HeaderTimestamp, "1614265330000"); return h }(), vecBody, vecTime, ErrTimestampTooNew},
		{"fractional timestamp", func() http.Header { h := vecHeader(vecSignature); h.Set(HeaderTimestamp, "1614265330.5"); return h }(), vecBody, vecTime, ErrInvalidTimestamp},
		{"no id", func() http.Header { h := vecHeader(vecSignature); h.Del(HeaderID); return h }(), vecBody, vecTime, ErrMissingHeader},
		{"no timestamp", func() http.Header { h := vecHeader(vecSignature); h.Del(HeaderTimestamp); return h }(), vecBody, vecTime, ErrMissingHeader},
		{"no signature", func() http.Header { h := vecHeader(vecSignature); h.Del(HeaderSignature); return h }(), vecBody, vecTime, ErrMissingHeader},
		{"blank signature", vecHeader("  "), vecBody, vecTime, ErrMissingHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v.Now = func() time.Time { return c.now }
			err := v.Verify(c.h, []byte(c.body))
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifierDefaultsToTheWallClock(t *testing.T) {
	v, err := NewVerifier(vecSecret)
	if err != nil {
		t.Fatal(err)
	}
	// The published vector is from 2021: far outside the tolerance today.
	if err := v.Verify(vecHeader(vecSignature), []byte(vecBody)); !errors.Is(err, ErrTimestampTooOld) {
		t.Fatalf("got %v", err)
	}
	ts := time.Now().Unix()
	sig, _ := Sign(vecSecret, "evt_1", strconv.FormatInt(ts, 10), []byte(`{}`))
	h := http.Header{}
	h.Set(HeaderID, "evt_1")
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, sig)
	if err := v.Verify(h, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
}

func TestEntriesTellWhichSecretSignedEach(t *testing.T) {
	const newSecret = "whsec_" + "bmV3LXNlY3JldC1hZnRlci1yb3RhdGlvbi0zMmJ5dGVz"
	sigNew, _ := Sign(newSecret, vecID, vecTimestamp, []byte(vecBody))
	v := vecVerifier(t, vecSecret, newSecret)
	entries, err := v.Entries(vecHeader(sigNew+" "+vecSignature+" v1,bm9wZQ=="), []byte(vecBody))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || entries[0].Secret != 1 || entries[1].Secret != 0 || entries[2].Secret != -1 {
		t.Fatalf("entries %+v", entries)
	}
	if entries[0].Version != "v1" || entries[0].Raw != sigNew {
		t.Fatalf("entry 0 %+v", entries[0])
	}
}

func TestSecrets(t *testing.T) {
	for _, bad := range []string{"", "whsec_", "whsec_not base64!", "whsec_%%%"} {
		if _, err := NewVerifier(bad); !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := NewVerifier(); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("no secret: %v", err)
	}
	key, err := DecodeSecret(vecSecret)
	if err != nil || len(key) != 24 {
		t.Fatalf("key %x %v", key, err)
	}
}
