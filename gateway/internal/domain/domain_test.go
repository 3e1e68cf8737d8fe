package domain_test

import (
	"strings"
	"testing"
	"time"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/ids"
)

func TestValidateAccount(t *testing.T) {
	for _, tc := range []struct {
		account string
		ok      bool
	}{
		{"acct_1", true},
		{"acct_dev", true},
		{"acct_ABCxyz0123", true},
		{"acct_" + strings.Repeat("a", 64), true},
		{"acct_" + strings.Repeat("a", 65), false},
		{"acct_", false},
		{"", false},
		{"acct", false},
		{"ACCT_abc", false},
		{"acc_abc", false},
		{"acct_ab-c", false},
		{"acct_ab_c", false},
		{"acct_ab c", false},
		{"acct_é", false},
		{" acct_abc", false},
	} {
		err := domain.ValidateAccount(tc.account)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateAccount(%q) = %v, want ok=%v", tc.account, err, tc.ok)
		}
		if err != nil && (domainerr.KindOf(err) != domainerr.Invalid || err.(*domainerr.Error).Param != "account") {
			t.Errorf("ValidateAccount(%q) error = %#v, want KindInvalid on account", tc.account, err)
		}
	}
}

func TestParseSecret(t *testing.T) {
	body := strings.Repeat("aZ09-_", 6)[:32]
	for _, tc := range []struct {
		name     string
		secret   string
		ok       bool
		livemode bool
		typ      domain.KeyType
	}{
		{"test", "sk_test_" + body, true, false, ""},
		{"live", "sk_live_" + body, true, true, ""},
		{"generated test", domain.NewSecret(domain.KeySecret, false), true, false, ""},
		{"generated live", domain.NewSecret(domain.KeySecret, true), true, true, ""},
		{"max length", "sk_test_" + strings.Repeat("a", 128), true, false, ""},
		{"too long", "sk_test_" + strings.Repeat("a", 129), false, false, ""},
		{"too short", "sk_test_" + body[:31], false, false, ""},
		{"prefix only", "sk_test_", false, false, ""},
		{"empty", "", false, false, ""},
		{"publishable", "pk_test_" + body, false, false, ""},
		{"upper prefix", "SK_TEST_" + body, false, false, ""},
		{"bad char", "sk_test_" + body[:31] + "+", false, false, ""},
		{"padding", "sk_test_" + body[:31] + "=", false, false, ""},
		{"space", "sk_test_" + body[:31] + " ", false, false, ""},
		{"restricted live", "rk_live_" + body, true, true, domain.KeyRestricted},
		{"restricted test", "rk_test_" + body, true, false, domain.KeyRestricted},
		{"generated restricted", domain.NewSecret(domain.KeyRestricted, true), true, true, domain.KeyRestricted},
		{"restricted too short", "rk_test_" + body[:31], false, false, ""},
		{"restricted bad char", "rk_test_" + body[:31] + "!", false, false, ""},
		{"upper restricted", "RK_TEST_" + body, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ok && tc.typ == "" {
				tc.typ = domain.KeySecret
			}
			typ, live, ok := domain.ParseSecret(tc.secret)
			if ok != tc.ok || live != tc.livemode || typ != tc.typ {
				t.Errorf("ParseSecret(%q) = (%q, %v, %v), want (%q, %v, %v)", tc.secret, typ, live, ok, tc.typ, tc.livemode, tc.ok)
			}
		})
	}
}

func TestParseGeneratedSecret(t *testing.T) {
	body := strings.Repeat("aZ09", 11)[:43]
	for _, tc := range []struct {
		secret   string
		ok       bool
		typ      domain.KeyType
		livemode bool
	}{
		{"sk_test_" + body, true, domain.KeySecret, false},
		{"sk_live_" + body, true, domain.KeySecret, true},
		{"rk_test_" + body, true, domain.KeyRestricted, false},
		{"rk_live_" + body, true, domain.KeyRestricted, true},
		{"sk_test_" + body[:42], false, "", false},
		{"sk_test_" + body + "a", false, "", false},
		{"sk_test_" + body[:42] + "-", false, "", false},
		{"sk_test_" + body[:42] + "_", false, "", false},
		{"sk_test_" + body[:42] + "=", false, "", false},
		{"sk_test_" + body[:42] + "é", false, "", false},
		{"pk_test_" + body, false, "", false},
		{"sk_test_" + strings.Repeat("a", 32), false, "", false}, // still looked up (ParseSecret), never imported
	} {
		typ, live, ok := domain.ParseGeneratedSecret(tc.secret)
		if ok != tc.ok || typ != tc.typ || live != tc.livemode {
			t.Errorf("ParseGeneratedSecret(%q) = (%q, %v, %v), want (%q, %v, %v)", tc.secret, typ, live, ok, tc.typ, tc.livemode, tc.ok)
		}
	}
}

// TestImportMessageNamesTheRule: the message of a refused import states the form NewSecret
// makes, so the admin API and docs/api.md agree with what is generated.
func TestImportMessageNamesTheRule(t *testing.T) {
	_, err := domain.NewKey(ids.NewGenerator(nil).New(ids.APIKey), domain.KeySpec{Account: "acct_1", Livemode: true},
		"sk_live_"+strings.Repeat("a", 32), time.Now())
	de := domainerr.As(err)
	want := "Invalid secret: expected 'sk_live_' followed by 43 letters and digits (base62), the form of a generated secret."
	if de == nil || de.Param != "secret" || de.Message != want {
		t.Fatalf("NewKey = %v, want the message %q", err, want)
	}
	if s := domain.NewSecret(domain.KeySecret, true); len(s)-len("sk_live_") != domain.SecretChars {
		t.Fatalf("a generated secret has %d characters after its prefix, the message says %d", len(s)-len("sk_live_"), domain.SecretChars)
	}
}

func TestNewSecretShape(t *testing.T) {
	seen := map[string]bool{}
	for _, live := range []bool{false, true} {
		for i := 0; i < 100; i++ {
			s := domain.NewSecret(domain.KeySecret, live)
			if !strings.HasPrefix(s, domain.SecretPrefix(domain.KeySecret, live)) || len(s) != len(domain.SecretPrefix(domain.KeySecret, live))+43 {
				t.Fatalf("NewSecret(%v) = %q: want prefix and 43 base62 characters (32 bytes)", live, s)
			}
			if _, _, ok := domain.ParseGeneratedSecret(s); !ok {
				t.Fatalf("NewSecret(%v) = %q is not in the generated form", live, s)
			}
			if seen[s] {
				t.Fatalf("NewSecret repeated %q", s)
			}
			seen[s] = true
		}
	}
}

func TestHashRoundTrip(t *testing.T) {
	h := domain.HashSecret("sk_test_abc")
	got, err := domain.ParseHash(h.String())
	if err != nil || got != h {
		t.Fatalf("ParseHash(String()) = %v, %v; want %v", got, err, h)
	}
	if len(h.String()) != 64 || strings.ToLower(h.String()) != h.String() {
		t.Fatalf("String() = %q, want 64 lower-case hex characters", h.String())
	}
	for _, bad := range []string{"", "abc", strings.Repeat("g", 64), strings.Repeat("a", 66)} {
		if _, err := domain.ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q) accepted", bad)
		}
	}
	if domain.HashSecret("sk_test_abc") == domain.HashSecret("sk_live_abc") {
		t.Fatal("the mode prefix must be part of the hash")
	}
}

func TestNewKey(t *testing.T) {
	gen := ids.NewGenerator(nil)
	now := time.Unix(1700000000, 0)
	testSecret, liveSecret := domain.NewSecret(domain.KeySecret, false), domain.NewSecret(domain.KeySecret, true)
	for _, tc := range []struct {
		name     string
		id       string
		account  string
		livemode bool
		secret   string
		param    string // "" when valid
	}{
		{"test key", gen.New(ids.APIKey), "acct_1", false, testSecret, ""},
		{"live key", gen.New(ids.APIKey), "acct_1", true, liveSecret, ""},
		{"bad id", "key_1", "acct_1", false, testSecret, "id"},
		{"wrong id prefix", gen.New(ids.Request), "acct_1", false, testSecret, "id"},
		{"bad account", gen.New(ids.APIKey), "acct-1", false, testSecret, "account"},
		{"malformed secret", gen.New(ids.APIKey), "acct_1", false, "sk_test_short", "secret"},
		// Imported secrets: the generated form exactly, 43 letters and digits.
		{"imported letters and digits", gen.New(ids.APIKey), "acct_1", false, "sk_test_" + strings.Repeat("aZ9", 15)[:43], ""},
		{"imported 42 characters", gen.New(ids.APIKey), "acct_1", false, "sk_test_" + strings.Repeat("a", 42), "secret"},
		{"imported 44 characters", gen.New(ids.APIKey), "acct_1", false, "sk_test_" + strings.Repeat("a", 44), "secret"},
		{"imported 32 base64url characters", gen.New(ids.APIKey), "acct_1", false, "sk_test_" + strings.Repeat("a", 32), "secret"},
		{"imported 128 characters", gen.New(ids.APIKey), "acct_1", false, "sk_test_" + strings.Repeat("a", 128), "secret"},
		{"imported with -", gen.New(ids.APIKey), "acct_1", false, "sk_test_" + strings.Repeat("a", 42) + "-", "secret"},
		{"imported with _", gen.New(ids.APIKey), "acct_1", false, "sk_test_" + strings.Repeat("a", 42) + "_", "secret"},
		{"live secret on test key", gen.New(ids.APIKey), "acct_1", false, liveSecret, "secret"},
		{"test secret on live key", gen.New(ids.APIKey), "acct_1", true, testSecret, "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := domain.NewKey(tc.id, domain.KeySpec{Account: tc.account, Livemode: tc.livemode}, tc.secret, now)
			if tc.param != "" {
				var de *domainerr.Error
				if err == nil || domainerr.KindOf(err) != domainerr.Invalid {
					t.Fatalf("NewKey = %v, want KindInvalid on %s", err, tc.param)
				}
				de = err.(*domainerr.Error)
				if de.Param != tc.param {
					t.Fatalf("param = %q, want %q (%v)", de.Param, tc.param, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewKey: %v", err)
			}
			if k.ID() != tc.id || k.Account() != tc.account || k.Livemode() != tc.livemode ||
				k.Hash() != domain.HashSecret(tc.secret) || !k.Created().Equal(now) ||
				k.Revoked() || !k.LastUsed().IsZero() {
				t.Fatalf("NewKey = %+v, fields do not match the input", k)
			}
		})
	}
}

func TestRehydrateKey(t *testing.T) {
	h := domain.HashSecret(domain.NewSecret(domain.KeySecret, true))
	created, used, revoked := time.Unix(1, 0), time.Unix(2, 0), time.Unix(3, 0)
	k := domain.RehydrateKey(domain.KeyState{ID: "key_x", Account: "acct_1", Livemode: true, Hash: h,
		Created: created, LastUsed: used, RevokedAt: revoked})
	if !k.Revoked() || !k.RevokedAt().Equal(revoked) || !k.LastUsed().Equal(used) || k.Hash() != h || k.Type() != domain.KeySecret {
		t.Fatalf("RehydrateKey lost fields: %+v", k)
	}
	if domain.RehydrateKey(domain.KeyState{ID: "key_x", Account: "acct_1", Livemode: true, Hash: h, Created: created}).Revoked() {
		t.Fatal("a key without revocation time is active")
	}
	rate := 7
	r := domain.RehydrateKey(domain.KeyState{ID: "key_y", Account: "acct_1", Type: domain.KeyRestricted, Hash: h,
		Permissions: map[string]string{"events": "read", "payment_requests": "write", "nonsense": "write", "collection_cases": "bogus"},
		RateLimit:   &rate, ExpiresAt: time.Unix(10, 0)})
	if got := r.Permissions().Map(); got[domain.ResEvents] != domain.AccessRead || got[domain.ResPaymentRequests] != domain.AccessWrite ||
		got[domain.ResCollectionCases] != domain.AccessNone || len(got) != len(domain.Resources()) {
		t.Fatalf("permissions = %v", got)
	}
	if rl, ok := r.RateLimit(); !ok || rl.PerSecond != 7 || !r.ExpiresAt().Equal(time.Unix(10, 0)) {
		t.Fatalf("rate limit / expiry lost: %+v", r)
	}
}
