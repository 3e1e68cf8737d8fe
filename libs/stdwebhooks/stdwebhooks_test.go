package stdwebhooks

import (
	"strings"
	"testing"
)

// The specification's published example: secret, message id, timestamp and body, and the
// signature every conforming implementation produces for them.
func TestSpecVector(t *testing.T) {
	key, err := DecodeSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign([][]byte{key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestTwoKeys(t *testing.T) {
	newKey, _ := DecodeSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	oldKey := []byte("another key of some length.....")
	both := Sign([][]byte{newKey, oldKey}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	parts := strings.Split(both, " ")
	if len(parts) != 2 || parts[0] != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" ||
		parts[1] != Sign([][]byte{oldKey}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`)) {
		t.Fatalf("two keys: %q", both)
	}
}

func TestDecodeSecret(t *testing.T) {
	for _, bad := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!", "sk_MfKQ"} {
		if _, err := DecodeSecret(bad); err == nil {
			t.Errorf("DecodeSecret(%q) accepted", bad)
		}
	}
}
