package domain_test

import (
	"testing"
	"time"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/ids"
)

func TestParsePermissions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    map[string]string
		param string // "" when valid
	}{
		{"empty grants nothing", map[string]string{}, ""},
		{"every resource", map[string]string{"verification_sessions": "read", "collection_cases": "write",
			"payment_requests": "none", "payment_agreements": "read", "webhook_endpoints": "write", "events": "read"}, ""},
		{"unknown resource", map[string]string{"events": "read", "charges": "write"}, "permissions[charges]"},
		{"sub-resource is not a permission", map[string]string{"webhook_deliveries": "read"}, "permissions[webhook_deliveries]"},
		{"bad level", map[string]string{"events": "admin"}, "permissions[events]"},
		{"level is case-sensitive", map[string]string{"events": "Read"}, "permissions[events]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := domain.ParsePermissions(tc.in)
			if tc.param == "" {
				if err != nil {
					t.Fatalf("ParsePermissions = %v", err)
				}
				return
			}
			de, ok := err.(*domainerr.Error)
			if !ok || de.Kind != domainerr.Invalid || de.Param != tc.param {
				t.Fatalf("ParsePermissions = %#v, want KindInvalid on %s", err, tc.param)
			}
		})
	}
}

func TestRestrictedKeyAllows(t *testing.T) {
	p, err := domain.ParsePermissions(map[string]string{"payment_requests": "write", "events": "read", "webhook_endpoints": "none"})
	if err != nil {
		t.Fatal(err)
	}
	gen := ids.NewGenerator(nil)
	rk, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: "acct_1", Type: domain.KeyRestricted, Permissions: &p},
		domain.NewSecret(domain.KeyRestricted, false), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sk, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: "acct_1"}, domain.NewSecret(domain.KeySecret, false), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		res          domain.Resource
		read, write  bool
		secretAllows bool
	}{
		{domain.ResPaymentRequests, true, true, true},
		{domain.ResEvents, true, false, true},
		{domain.ResWebhookEndpoints, false, false, true},
		{domain.ResCollectionCases, false, false, true},
	} {
		if got := rk.Allows(tc.res, false); got != tc.read {
			t.Errorf("restricted read %s = %v, want %v", tc.res, got, tc.read)
		}
		if got := rk.Allows(tc.res, true); got != tc.write {
			t.Errorf("restricted write %s = %v, want %v", tc.res, got, tc.write)
		}
		if !sk.Allows(tc.res, true) || !sk.Allows(tc.res, false) {
			t.Errorf("a secret key is refused %s", tc.res)
		}
	}
}

func TestResourceOf(t *testing.T) {
	for seg, want := range map[string]domain.Resource{
		"verification_sessions": domain.ResVerificationSessions,
		"verification_reports":  domain.ResVerificationSessions,
		"collection_cases":      domain.ResCollectionCases,
		"payment_requests":      domain.ResPaymentRequests,
		"payment_agreements":    domain.ResPaymentAgreements,
		"webhook_endpoints":     domain.ResWebhookEndpoints,
		"webhook_deliveries":    domain.ResWebhookEndpoints,
		"events":                domain.ResEvents,
	} {
		if got, ok := domain.ResourceOf(seg); !ok || got != want {
			t.Errorf("ResourceOf(%q) = %q, %v; want %q", seg, got, ok, want)
		}
	}
	if _, ok := domain.ResourceOf("charges"); ok {
		t.Error("ResourceOf(charges) is a resource")
	}
}

func TestNewKeyRestrictedRules(t *testing.T) {
	gen := ids.NewGenerator(nil)
	p := domain.Permissions{}
	now := time.Now()
	for _, tc := range []struct {
		name   string
		spec   domain.KeySpec
		secret string
		param  string
	}{
		{"restricted test", domain.KeySpec{Account: "acct_1", Type: domain.KeyRestricted, Permissions: &p}, domain.NewSecret(domain.KeyRestricted, false), ""},
		{"restricted live", domain.KeySpec{Account: "acct_1", Livemode: true, Type: domain.KeyRestricted}, domain.NewSecret(domain.KeyRestricted, true), ""},
		{"sk secret on restricted key", domain.KeySpec{Account: "acct_1", Type: domain.KeyRestricted}, domain.NewSecret(domain.KeySecret, false), "secret"},
		{"rk secret on secret key", domain.KeySpec{Account: "acct_1"}, domain.NewSecret(domain.KeyRestricted, false), "secret"},
		{"permissions on secret key", domain.KeySpec{Account: "acct_1", Permissions: &p}, domain.NewSecret(domain.KeySecret, false), "permissions"},
		{"negative rate limit", domain.KeySpec{Account: "acct_1", RateLimit: &domain.RateLimit{PerSecond: -1}}, domain.NewSecret(domain.KeySecret, false), "rate_limit"},
		{"rate limit too high", domain.KeySpec{Account: "acct_1", RateLimit: &domain.RateLimit{PerSecond: domain.MaxRateLimit + 1}}, domain.NewSecret(domain.KeySecret, false), "rate_limit"},
		{"unlimited key", domain.KeySpec{Account: "acct_1", RateLimit: &domain.RateLimit{PerSecond: 0}}, domain.NewSecret(domain.KeySecret, false), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := domain.NewKey(gen.New(ids.APIKey), tc.spec, tc.secret, now)
			if tc.param == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if de, ok := err.(*domainerr.Error); !ok || de.Param != tc.param {
				t.Fatalf("NewKey = %#v, want an error on %s", err, tc.param)
			}
		})
	}
}

func TestRoll(t *testing.T) {
	gen := ids.NewGenerator(nil)
	now := time.Unix(1_700_000_000, 0)
	p, _ := domain.ParsePermissions(map[string]string{"events": "read"})
	old, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: "acct_1", Livemode: true, Type: domain.KeyRestricted,
		Permissions: &p, RateLimit: &domain.RateLimit{PerSecond: 9}}, domain.NewSecret(domain.KeyRestricted, true), now)
	if err != nil {
		t.Fatal(err)
	}
	nextSecret := domain.NewSecret(domain.KeyRestricted, true)
	next, expiring, err := old.Roll(gen.New(ids.APIKey), nextSecret, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rl, _ := next.RateLimit()
	if next.Account() != "acct_1" || !next.Livemode() || next.Type() != domain.KeyRestricted || next.Hash() != domain.HashSecret(nextSecret) ||
		next.Permissions().Of(domain.ResEvents) != domain.AccessRead || rl.PerSecond != 9 || !next.ExpiresAt().IsZero() {
		t.Fatalf("successor does not carry the old key's settings: %+v", next)
	}
	if !expiring.ExpiresAt().Equal(now.Add(time.Hour)) || !expiring.Active(now.Add(59*time.Minute)) || expiring.Active(now.Add(time.Hour)) {
		t.Fatalf("old key expiry = %v", expiring.ExpiresAt())
	}
	if _, _, err := expiring.Roll(gen.New(ids.APIKey), domain.NewSecret(domain.KeyRestricted, true), now, 0); domainerr.CodeOf(err) != domainerr.CodeInvalidState {
		t.Fatalf("rolling a rolled key = %v, want KindInvalidState", err)
	}
	for _, bad := range []time.Duration{-time.Second, domain.MaxRollExpiry + time.Second} {
		if _, _, err := old.Roll(gen.New(ids.APIKey), domain.NewSecret(domain.KeyRestricted, true), now, bad); domainerr.KindOf(err) != domainerr.Invalid {
			t.Fatalf("expires_in %s = %v, want KindInvalid", bad, err)
		}
	}
	_, immediate, err := old.Roll(gen.New(ids.APIKey), domain.NewSecret(domain.KeyRestricted, true), now, 0)
	if err != nil || immediate.Active(now) {
		t.Fatalf("expires_in 0: err %v, active at once = %v", err, immediate.Active(now))
	}
	revoked := domain.RehydrateKey(domain.KeyState{ID: old.ID(), Account: "acct_1", Hash: old.Hash(), RevokedAt: now})
	if _, _, err := revoked.Roll(gen.New(ids.APIKey), domain.NewSecret(domain.KeySecret, false), now, 0); domainerr.CodeOf(err) != domainerr.CodeInvalidState {
		t.Fatalf("rolling a revoked key = %v, want KindInvalidState", err)
	}
}
