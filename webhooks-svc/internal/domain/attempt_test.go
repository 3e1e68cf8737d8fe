package domain

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

var allAttemptErrorCodes = []AttemptErrorCode{
	AttemptDNSResolutionFailed, AttemptConnectionRefused, AttemptConnectionTimeout, AttemptAddressNotAllowed,
	AttemptTLSHandshakeFailed, AttemptTLSCertificateInvalid, AttemptResponseTimeout, AttemptHTTPStatus,
	AttemptConnectionFailed,
}

// TestAttemptMessages: every code has a message of its own, written for the customer, that
// names no address, port or resolver whatever the sender's error said.
func TestAttemptMessages(t *testing.T) {
	leak := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|:\d+|(?i)\blookup\b|dial tcp`)
	seen := map[string]AttemptErrorCode{}
	for _, c := range allAttemptErrorCodes {
		if !c.Valid() {
			t.Errorf("%s is not valid", c)
		}
		for _, status := range []int{0, 302, 404, 500} {
			a := Result{At: t0, Status: status, ErrorCode: c, Cause: errors.New("dial tcp 10.0.0.7:443: address not allowed")}.Attempt()
			msg := a.Message()
			if msg == "" || leak.MatchString(msg) || !strings.HasSuffix(msg, ".") {
				t.Errorf("%s (status %d): message %q", c, status, msg)
			}
		}
		msg := Attempt{Status: 0, ErrorCode: c}.Message()
		if other, dup := seen[msg]; dup {
			t.Errorf("%s and %s share the message %q", c, other, msg)
		}
		seen[msg] = c
	}
	if AttemptErrorCode("connection_reset").Valid() || AttemptErrorCode("").Valid() {
		t.Error("an unknown code is valid")
	}
}

func TestResultAttempt(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want AttemptErrorCode
	}{
		{Result{Status: 200, ErrorCode: AttemptResponseTimeout}, ""},
		{Result{Status: 204}, ""},
		{Result{Status: 500}, AttemptHTTPStatus},
		{Result{Status: 302}, AttemptHTTPStatus},
		{Result{Status: 410, ErrorCode: AttemptConnectionFailed}, AttemptHTTPStatus},
		{Result{ErrorCode: AttemptAddressNotAllowed}, AttemptAddressNotAllowed},
		{Result{}, AttemptConnectionFailed},
		{Result{ErrorCode: AttemptHTTPStatus}, AttemptConnectionFailed}, // no status: no HTTP answer
		{Result{ErrorCode: "dial tcp 127.0.0.1:80"}, AttemptConnectionFailed},
	} {
		if got := tc.r.Attempt().ErrorCode; got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
	a := Result{At: t0.In(time.FixedZone("x", 3600)), Duration: time.Second, Status: 503}.Attempt()
	if a.At != t0 || a.Duration != time.Second || a.Status != 503 {
		t.Errorf("attempt %+v", a)
	}
	if m := (Attempt{Status: 503, ErrorCode: AttemptHTTPStatus}).Message(); !strings.Contains(m, "503") {
		t.Errorf("http_status message %q does not name the status", m)
	}
}

// TestRehydratedAttemptsWithoutCode: attempts stored before attempts had a code are known by
// their status alone.
func TestRehydratedAttemptsWithoutCode(t *testing.T) {
	d := RehydrateDelivery(DeliveryState{ID: "wd_1", Status: DeliveryFailed, Attempts: []Attempt{
		{At: t0}, {At: t0, Status: 500}, {At: t0, Status: 200}, {At: t0, ErrorCode: AttemptDNSResolutionFailed},
		{At: t0, ErrorCode: "a_code_from_the_future"},
	}})
	want := []AttemptErrorCode{AttemptConnectionFailed, AttemptHTTPStatus, "", AttemptDNSResolutionFailed, AttemptConnectionFailed}
	for i, a := range d.Attempts() {
		if a.ErrorCode != want[i] {
			t.Errorf("attempt %d: %q, want %q", i, a.ErrorCode, want[i])
		}
	}
}
