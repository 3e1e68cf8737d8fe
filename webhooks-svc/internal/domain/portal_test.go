package domain_test

import (
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"

	"rentalplatform/webhooks-svc/internal/domain"
)

func newPortal(t *testing.T, p domain.NewPortalSessionParams) *domain.PortalSession {
	t.Helper()
	if p.ID == "" {
		p.ID = "wps_01h00000000000000000000000"
	}
	if p.Token == "" {
		p.Token = "wpst_token"
	}
	ps, err := domain.NewPortalSession(p)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestPortalSessionToken(t *testing.T) {
	created := time.Date(2026, 11, 2, 10, 0, 0, 500, time.UTC)
	ps := newPortal(t, domain.NewPortalSessionParams{Account: "acct_1", Token: "wpst_right", Created: created})
	st := ps.State()
	if strings.Contains(st.TokenHash, "wpst_right") || st.TokenHash != domain.HashPortalToken("wpst_right") || len(st.TokenHash) != 64 {
		t.Fatalf("stored %q: want the token's SHA-256 only", st.TokenHash)
	}
	if !ps.ExpiresAt().Equal(ps.Created().Add(time.Hour)) || ps.Created().Nanosecond() != 0 {
		t.Fatalf("created %v, expires %v", ps.Created(), ps.ExpiresAt())
	}
	for _, tc := range []struct {
		name  string
		token string
		at    time.Time
		opens bool
	}{
		{"its token", "wpst_right", created, true},
		{"its token, a second before expiry", "wpst_right", ps.ExpiresAt().Add(-time.Second), true},
		{"its token at expiry", "wpst_right", ps.ExpiresAt(), false},
		{"its token after expiry", "wpst_right", ps.ExpiresAt().Add(time.Minute), false},
		{"another token", "wpst_wrong", created, false},
		{"its hash", st.TokenHash, created, false},
		{"none", "", created, false},
	} {
		if got := ps.Opens(tc.token, tc.at); got != tc.opens {
			t.Errorf("%s: opens %v, want %v", tc.name, got, tc.opens)
		}
	}
	back := domain.RehydratePortalSession(st)
	if !back.Opens("wpst_right", created) || back.State() != st {
		t.Fatalf("rehydrated %+v, want %+v", back.State(), st)
	}
	if r := ps.Remaining(created.Add(59 * time.Minute)); r <= 0 || r > time.Minute {
		t.Fatalf("remaining %v", r)
	}
	if r := ps.Remaining(created.Add(2 * time.Hour)); r != 0 {
		t.Fatalf("remaining after expiry %v", r)
	}
}

func TestPortalSessionCSRF(t *testing.T) {
	a := newPortal(t, domain.NewPortalSessionParams{ID: "wps_01h00000000000000000000001", Token: "wpst_a"})
	b := newPortal(t, domain.NewPortalSessionParams{ID: "wps_01h00000000000000000000002", Token: "wpst_b"})
	v := a.CSRF("wpst_a")
	if !a.CSRFValid("wpst_a", v) || strings.Contains(v, "wpst_a") {
		t.Fatalf("csrf %q", v)
	}
	for name, ok := range map[string]bool{
		"another token's":   a.CSRFValid("wpst_b", v),
		"another session's": a.CSRFValid("wpst_a", b.CSRF("wpst_a")),
		"empty":             a.CSRFValid("wpst_a", ""),
	} {
		if ok {
			t.Errorf("%s csrf value accepted", name)
		}
	}
}

func TestPortalSessionScopeAndAccess(t *testing.T) {
	all := newPortal(t, domain.NewPortalSessionParams{})
	one := newPortal(t, domain.NewPortalSessionParams{Endpoint: "we_1", Access: ptr("read_write")})
	if all.Writable() || all.Access() != domain.PortalReadOnly || !one.Writable() {
		t.Fatalf("access: %s, %s", all.Access(), one.Access())
	}
	if !all.Covers("we_1") || !all.Covers("we_2") || all.Covers("") {
		t.Fatal("an unscoped session covers every endpoint (and nothing else)")
	}
	if !one.Covers("we_1") || one.Covers("we_2") || one.Covers("") {
		t.Fatal("a scoped session covers its endpoint only")
	}
	if u := newPortal(t, domain.NewPortalSessionParams{ReturnURL: ptr("https://Shop.Example.com/back?x=1")}).ReturnURL(); u != "https://shop.example.com/back?x=1" {
		t.Fatalf("return_url stored as %q", u)
	}
	for _, tc := range []struct {
		name        string
		p           domain.NewPortalSessionParams
		param, code string
	}{
		{"access", domain.NewPortalSessionParams{Access: ptr("admin")}, "access", domain.CodeParameterInvalid},
		{"empty access", domain.NewPortalSessionParams{Access: ptr("")}, "access", domain.CodeParameterInvalid},
		{"http return_url", domain.NewPortalSessionParams{ReturnURL: ptr("http://shop.example.com/")}, "return_url", domain.CodeURLNotHTTPS},
		{"return_url with credentials", domain.NewPortalSessionParams{ReturnURL: ptr("https://u:p@shop.example.com/")}, "return_url", domainerr.CodeURLCredentials},
	} {
		_, err := domain.NewPortalSession(tc.p)
		e := domainerr.As(err)
		if e == nil || e.Kind != domainerr.Invalid || e.Param != tc.param || e.Code != tc.code {
			t.Errorf("%s: %v, want %s naming %s", tc.name, err, tc.code, tc.param)
		}
	}
}
