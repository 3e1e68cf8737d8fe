package tasks

import "testing"

func TestExpirePayload(t *testing.T) {
	e := Expire{Session: "vs_01kaj2c8v6f3q9ysq7m2d0w1xz"}
	got, err := ParseExpire(e.Marshal())
	if err != nil || got != e || e.ID() != "vs_01kaj2c8v6f3q9ysq7m2d0w1xz:expire" {
		t.Fatalf("round trip: %+v %v, id %s", got, err, e.ID())
	}
	for _, bad := range []string{``, `{}`, `{"session":"we_01kaj2c8v6f3q9ysq7m2d0w1xz"}`, `{"session":"vs_1"}`} {
		if _, err := ParseExpire([]byte(bad)); err == nil {
			t.Errorf("ParseExpire(%s) accepted", bad)
		}
	}
}
