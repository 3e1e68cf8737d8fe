package ids

import (
	"encoding/base64"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewIsSortedAndUnique(t *testing.T) {
	g := NewGenerator(nil)
	const n = 10000
	got := make([]string, n)
	for i := range got {
		got[i] = g.New(WebhookEndpoint)
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("ids from one generator are not in creation order")
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if !Valid(WebhookEndpoint, id) {
			t.Fatalf("Valid(%q) = false", id)
		}
	}
}

func TestNewWithFrozenClockStaysMonotonic(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	g := NewGenerator(func() time.Time { return at })
	prev := g.New(Event)
	for i := 0; i < 1000; i++ {
		next := g.New(Event)
		if next <= prev {
			t.Fatalf("%s not after %s", next, prev)
		}
		prev = next
	}
	// A clock that steps back must not produce an earlier id either.
	at = at.Add(-time.Hour)
	if next := g.New(Event); next <= prev {
		t.Fatalf("clock step back: %s not after %s", next, prev)
	}
}

func TestTimeRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_763_000_000_123)
	g := NewGenerator(func() time.Time { return at })
	id := g.New(PaymentRequest)
	got, ok := Time(PaymentRequest, id)
	if !ok || !got.Equal(at) {
		t.Fatalf("Time(%s) = %v, %v; want %v", id, got, ok, at)
	}
	if _, ok := Time(Event, id); ok {
		t.Fatal("Time accepted the wrong prefix")
	}
}

func TestOrderAcrossMilliseconds(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	g := NewGenerator(func() time.Time { return at })
	a := g.New(Event)
	at = at.Add(time.Millisecond)
	b := g.New(Event)
	at = at.Add(400 * 24 * time.Hour)
	c := g.New(Event)
	if !(a < b && b < c) {
		t.Fatalf("want %s < %s < %s", a, b, c)
	}
}

func TestValidRejects(t *testing.T) {
	g := NewGenerator(nil)
	id := g.New(Event)
	for _, bad := range []string{"", Event, "we_" + id[4:], id + "0", id[:len(id)-1], strings.ToUpper(id), id[:10] + "u" + id[11:]} {
		if Valid(Event, bad) {
			t.Errorf("Valid(%q) = true", bad)
		}
	}
}

func TestUUIDv7(t *testing.T) {
	g := NewGenerator(nil)
	re := regexp.MustCompile(`^dc_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	prev := ""
	for i := 0; i < 1000; i++ {
		id := g.NewUUIDv7(CollectionCase)
		if !re.MatchString(id) || !ValidUUIDv7(CollectionCase, id) {
			t.Fatalf("%q is not a prefixed UUIDv7", id)
		}
		if id <= prev {
			t.Fatalf("%s not after %s", id, prev)
		}
		prev = id
	}
}

func TestValidUUIDv7(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"dc_0190a0b0-0000-7000-8000-000000000000", true},
		{"dc_0190a0b0-0000-7000-b000-00000000000f", true},
		{"dc_0190A0B0-0000-7000-8000-000000000000", false}, // upper case is not the form issued
		{"dc_0190a0b0-0000-4000-8000-000000000000", false}, // version 4
		{"dc_0190a0b0-0000-7000-c000-000000000000", false}, // not the RFC 9562 variant
		{"dc_0190a0b000007000800000000000000000000", false},
		{"dc_0190a0b0-0000-7000-8000-00000000000", false},
		{"vs_0190a0b0-0000-7000-8000-000000000000", false},
		{"dc_0190a0b0-0000-7000-8000-00000000000g", false},
		{"", false},
	} {
		if got := ValidUUIDv7(CollectionCase, tc.id); got != tc.want {
			t.Errorf("ValidUUIDv7(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	s := Secret("sk_test_", 32)
	if !regexp.MustCompile(`^sk_test_[0-9A-Za-z]{43}$`).MatchString(s) {
		t.Fatalf("Secret: %q is not sk_test_ + 43 base62 characters (≥ 256 bits)", s)
	}
	w := StdSecret("whsec_", 32)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(w, "whsec_"))
	if err != nil || len(raw) != 32 {
		t.Fatalf("StdSecret: %q decodes to %d bytes, %v", w, len(raw), err)
	}
	if Secret("sk_test_", 32) == s {
		t.Fatal("two secrets are equal")
	}
}

func TestConcurrentGenerator(t *testing.T) {
	g := NewGenerator(nil)
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				id := g.New(Request)
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate %s", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func BenchmarkNew(b *testing.B) {
	g := NewGenerator(nil)
	for i := 0; i < b.N; i++ {
		_ = g.New(Request)
	}
}

func TestDerived(t *testing.T) {
	at := time.UnixMilli(1795780000123)
	a := Derived(Charge, at, []byte("preq_1:1:pm_1"))
	if a != Derived(Charge, at, []byte("preq_1:1:pm_1")) || !Valid(Charge, a) {
		t.Fatalf("Derived %q: not stable or not well-formed", a)
	}
	if got, ok := Time(Charge, a); !ok || !got.Equal(at) {
		t.Fatalf("Time(%s) = %v, want %v", a, got, at)
	}
	if a == Derived(Charge, at, []byte("preq_1:2:pm_1")) || a == Derived(Charge, at.Add(time.Millisecond), []byte("preq_1:1:pm_1")) {
		t.Fatal("another key or time gave the same id")
	}
}
