package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/stdwebhooks"
)

// The example's own verification agrees with the platform's signing, and refuses what it must.
func TestVerify(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	other := []byte("fedcba9876543210fedcba9876543210")
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"payment_request.succeeded"}`)
	signed := func(keys [][]byte, at time.Time) http.Header {
		h := http.Header{}
		h.Set("webhook-id", "evt_1")
		h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
		h.Set("webhook-signature", stdwebhooks.Sign(keys, "evt_1", at.Unix(), body))
		return h
	}
	for _, c := range []struct {
		name string
		h    http.Header
		body []byte
		want string
	}{
		{"signed", signed([][]byte{key}, now), body, ""},
		{"one of two signatures (a rotation)", signed([][]byte{other, key}, now), body, ""},
		{"another secret", signed([][]byte{other}, now), body, "no signature matches"},
		{"a changed body", signed([][]byte{key}, now), []byte(`{"id":"evt_2"}`), "no signature matches"},
		{"too old", signed([][]byte{key}, now.Add(-6*time.Minute)), body, "away from now"},
		{"unsigned", http.Header{}, body, "missing"},
	} {
		err := verify(key, c.h, c.body, now)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
