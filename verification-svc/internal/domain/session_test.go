package domain_test

import (
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"

	"rentalplatform/verification-svc/internal/domain"
)

// now is the fake clock of these tests: every session is created at it.
var now = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

func ptr[T any](v T) *T { return &v }

// valid returns parameters that pass every rule, with every optional field set.
func valid() domain.NewParams {
	return domain.NewParams{
		ID: "vs_01kaj2c8v6f3q9ysq7m2d0w1xz", Account: "acct_a", Created: now, TTL: domain.DefaultTTL,
		ClientSecret: "vs_01kaj2c8v6f3q9ysq7m2d0w1xz_secret_x", WebhookSecret: "whsec_c2VjcmV0",
		Applicant: &domain.ApplicantParams{
			FirstName: ptr("Jane"), LastName: ptr("Doe"), Email: ptr("jane@example.com"),
			DateOfBirth: ptr("1990-02-28"), Phone: ptr("+4915112345678"),
			Address: &domain.AddressParams{Line1: ptr("1 Main St"), Line2: ptr("Apt 2"), City: ptr("Berlin"),
				State: ptr("BE"), PostalCode: ptr("10115"), Country: ptr("de")},
		},
		Products:    []string{"identity", "income", "credit"},
		RedirectURL: ptr("https://example.com/done"),
		WebhookURL:  ptr("https://hooks.example.com/vs"),
		Metadata:    map[string]string{"unit": "4B", "dropped": ""},
	}
}

func TestNewValidSession(t *testing.T) {
	s, err := domain.New(valid())
	if err != nil {
		t.Fatal(err)
	}
	if s.Status() != domain.StatusCreated || s.Created() != now.Truncate(time.Second) ||
		s.ExpiresAt() != now.Truncate(time.Second).Add(7*24*time.Hour) {
		t.Fatalf("status %s created %s expires %s", s.Status(), s.Created(), s.ExpiresAt())
	}
	a := s.Applicant()
	if a.Address == nil || a.Address.Country != "DE" || a.Phone != "+4915112345678" || a.DateOfBirth != "1990-02-28" {
		t.Fatalf("applicant %+v %+v", a, a.Address)
	}
	if md := s.Metadata(); len(md) != 1 || md["unit"] != "4B" {
		t.Fatalf("metadata %v: a key with an empty value is not stored", md)
	}
	if s.WebhookSecret() == "" || s.Report() != nil || s.LastError() != nil || len(s.Attempts()) != 0 {
		t.Fatalf("new session: %+v", s.State())
	}
	if got := s.Raised(); len(got) != 1 || got[0] != (events.Raised{Type: eventtype.VerificationSessionCreated}) {
		t.Fatalf("raised %v", got)
	}

	// Only the required fields: the optional ones stay empty, and no webhook secret is kept
	// without a webhook_url.
	p := valid()
	p.Applicant = &domain.ApplicantParams{FirstName: ptr("J"), LastName: ptr("D"), Email: ptr("j@example.com")}
	p.RedirectURL, p.WebhookURL, p.Metadata = nil, nil, nil
	s, err = domain.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Applicant().Address != nil || s.WebhookURL() != "" || s.WebhookSecret() != "" || s.Metadata() == nil {
		t.Fatalf("minimal session: %+v", s.State())
	}
}

// TestValidation: every rule of POST /v1/verification_sessions, with the code and the dotted
// parameter it reports.
func TestValidation(t *testing.T) {
	long := func(n int) *string { return ptr(strings.Repeat("a", n)) }
	type change func(*domain.NewParams)
	app := func(f func(*domain.ApplicantParams)) change { return func(p *domain.NewParams) { f(p.Applicant) } }
	addr := func(f func(*domain.AddressParams)) change {
		return func(p *domain.NewParams) { f(p.Applicant.Address) }
	}
	tests := []struct {
		name   string
		change change
		code   string
		param  string
	}{
		{"applicant missing", func(p *domain.NewParams) { p.Applicant = nil }, "parameter_missing", "applicant"},
		{"first_name missing", app(func(a *domain.ApplicantParams) { a.FirstName = nil }), "parameter_missing", "applicant.first_name"},
		{"first_name empty", app(func(a *domain.ApplicantParams) { a.FirstName = ptr("") }), "parameter_invalid", "applicant.first_name"},
		{"first_name blank", app(func(a *domain.ApplicantParams) { a.FirstName = ptr("  ") }), "parameter_invalid", "applicant.first_name"},
		{"first_name too long", app(func(a *domain.ApplicantParams) { a.FirstName = long(101) }), "parameter_invalid", "applicant.first_name"},
		{"first_name NUL", app(func(a *domain.ApplicantParams) { a.FirstName = ptr("Jane\x00") }), "parameter_invalid", "applicant.first_name"},
		{"last_name line feed", app(func(a *domain.ApplicantParams) { a.LastName = ptr("Doe\nX") }), "parameter_invalid", "applicant.last_name"},
		{"last_name only a line feed", app(func(a *domain.ApplicantParams) { a.LastName = ptr("\n") }), "parameter_invalid", "applicant.last_name"},
		{"last_name invalid UTF-8", app(func(a *domain.ApplicantParams) { a.LastName = ptr("Do\xe9") }), "parameter_invalid", "applicant.last_name"},
		{"last_name missing", app(func(a *domain.ApplicantParams) { a.LastName = nil }), "parameter_missing", "applicant.last_name"},
		{"last_name empty", app(func(a *domain.ApplicantParams) { a.LastName = ptr("") }), "parameter_invalid", "applicant.last_name"},
		{"last_name too long", app(func(a *domain.ApplicantParams) { a.LastName = long(101) }), "parameter_invalid", "applicant.last_name"},
		{"email missing", app(func(a *domain.ApplicantParams) { a.Email = nil }), "parameter_missing", "applicant.email"},
		{"email empty", app(func(a *domain.ApplicantParams) { a.Email = ptr("") }), "parameter_invalid", "applicant.email"},
		{"email no domain dot", app(func(a *domain.ApplicantParams) { a.Email = ptr("jane@localhost") }), "parameter_invalid", "applicant.email"},
		{"email display name", app(func(a *domain.ApplicantParams) { a.Email = ptr("Jane <jane@example.com>") }), "parameter_invalid", "applicant.email"},
		{"date_of_birth form", app(func(a *domain.ApplicantParams) { a.DateOfBirth = ptr("28/02/1990") }), "parameter_invalid", "applicant.date_of_birth"},
		{"date_of_birth not a day", app(func(a *domain.ApplicantParams) { a.DateOfBirth = ptr("1990-02-30") }), "parameter_invalid", "applicant.date_of_birth"},
		{"date_of_birth today", app(func(a *domain.ApplicantParams) { a.DateOfBirth = ptr("2026-03-14") }), "parameter_invalid", "applicant.date_of_birth"},
		{"date_of_birth future", app(func(a *domain.ApplicantParams) { a.DateOfBirth = ptr("2030-01-01") }), "parameter_invalid", "applicant.date_of_birth"},
		{"date_of_birth before 1900", app(func(a *domain.ApplicantParams) { a.DateOfBirth = ptr("1899-12-31") }), "parameter_invalid", "applicant.date_of_birth"},
		{"date_of_birth empty", app(func(a *domain.ApplicantParams) { a.DateOfBirth = ptr("") }), "parameter_invalid", "applicant.date_of_birth"},
		{"phone not E.164", app(func(a *domain.ApplicantParams) { a.Phone = ptr("015112345678") }), "parameter_invalid", "applicant.phone"},
		{"phone separators", app(func(a *domain.ApplicantParams) { a.Phone = ptr("+49 151 1234567") }), "parameter_invalid", "applicant.phone"},
		{"phone empty", app(func(a *domain.ApplicantParams) { a.Phone = ptr("") }), "parameter_invalid", "applicant.phone"},
		{"line1 missing", addr(func(a *domain.AddressParams) { a.Line1 = nil }), "parameter_missing", "applicant.address.line1"},
		{"line1 blank", addr(func(a *domain.AddressParams) { a.Line1 = ptr(" ") }), "parameter_invalid", "applicant.address.line1"},
		{"line1 too long", addr(func(a *domain.AddressParams) { a.Line1 = long(201) }), "parameter_invalid", "applicant.address.line1"},
		{"line1 DEL", addr(func(a *domain.AddressParams) { a.Line1 = ptr("1 Main St\x7f") }), "parameter_invalid", "applicant.address.line1"},
		{"line2 C1", addr(func(a *domain.AddressParams) { a.Line2 = ptr("Flat\u00852") }), "parameter_invalid", "applicant.address.line2"},
		{"city ESC", addr(func(a *domain.AddressParams) { a.City = ptr("\x1b[31mParis") }), "parameter_invalid", "applicant.address.city"},
		{"state line separator", addr(func(a *domain.AddressParams) { a.State = ptr("A\u2028B") }), "parameter_invalid", "applicant.address.state"},
		{"postal_code tab", addr(func(a *domain.AddressParams) { a.PostalCode = ptr("75\t001") }), "parameter_invalid", "applicant.address.postal_code"},
		{"line2 empty", addr(func(a *domain.AddressParams) { a.Line2 = ptr("") }), "parameter_invalid", "applicant.address.line2"},
		{"line2 too long", addr(func(a *domain.AddressParams) { a.Line2 = long(201) }), "parameter_invalid", "applicant.address.line2"},
		{"city missing", addr(func(a *domain.AddressParams) { a.City = nil }), "parameter_missing", "applicant.address.city"},
		{"city too long", addr(func(a *domain.AddressParams) { a.City = long(101) }), "parameter_invalid", "applicant.address.city"},
		{"state empty", addr(func(a *domain.AddressParams) { a.State = ptr("") }), "parameter_invalid", "applicant.address.state"},
		{"state too long", addr(func(a *domain.AddressParams) { a.State = long(101) }), "parameter_invalid", "applicant.address.state"},
		{"postal_code missing", addr(func(a *domain.AddressParams) { a.PostalCode = nil }), "parameter_missing", "applicant.address.postal_code"},
		{"postal_code too long", addr(func(a *domain.AddressParams) { a.PostalCode = long(21) }), "parameter_invalid", "applicant.address.postal_code"},
		{"country missing", addr(func(a *domain.AddressParams) { a.Country = nil }), "parameter_missing", "applicant.address.country"},
		{"country unknown", addr(func(a *domain.AddressParams) { a.Country = ptr("UK") }), "parameter_invalid", "applicant.address.country"},
		{"country alpha-3", addr(func(a *domain.AddressParams) { a.Country = ptr("DEU") }), "parameter_invalid", "applicant.address.country"},
		{"products missing", func(p *domain.NewParams) { p.Products = nil }, "parameter_missing", "products"},
		{"products empty", func(p *domain.NewParams) { p.Products = []string{} }, "parameter_invalid", "products"},
		{"product unknown", func(p *domain.NewParams) { p.Products = []string{"identity", "scoring"} }, "parameter_invalid", "products[1]"},
		{"product twice", func(p *domain.NewParams) { p.Products = []string{"credit", "income", "credit"} }, "parameter_invalid", "products[2]"},
		{"redirect_url http", func(p *domain.NewParams) { p.RedirectURL = ptr("http://example.com") }, "url_not_https", "redirect_url"},
		{"redirect_url credentials", func(p *domain.NewParams) { p.RedirectURL = ptr("https://u:p@example.com") }, "url_credentials_not_allowed", "redirect_url"},
		{"redirect_url no host", func(p *domain.NewParams) { p.RedirectURL = ptr("https:///path") }, "parameter_invalid", "redirect_url"},
		{"redirect_url empty", func(p *domain.NewParams) { p.RedirectURL = ptr("") }, "parameter_invalid", "redirect_url"},
		{"redirect_url too long", func(p *domain.NewParams) { p.RedirectURL = ptr("https://example.com/" + strings.Repeat("a", 2048)) }, "parameter_invalid", "redirect_url"},
		{"webhook_url http", func(p *domain.NewParams) { p.WebhookURL = ptr("http://hooks.example.com") }, "url_not_https", "webhook_url"},
		{"webhook_url credentials", func(p *domain.NewParams) { p.WebhookURL = ptr("https://user@hooks.example.com") }, "url_credentials_not_allowed", "webhook_url"},
		{"webhook_url empty", func(p *domain.NewParams) { p.WebhookURL = ptr("") }, "parameter_invalid", "webhook_url"},
		{"webhook_url fragment", func(p *domain.NewParams) { p.WebhookURL = ptr("https://hooks.example.com/#x") }, "parameter_invalid", "webhook_url"},
		{"webhook_url empty port", func(p *domain.NewParams) { p.WebhookURL = ptr("https://hooks.example.com:/x") }, "parameter_invalid", "webhook_url"},
		{"webhook_url refused by the host guard", func(p *domain.NewParams) {
			p.WebhookURL = ptr("https://[::1]/x")
			p.CheckWebhookHost = func(host string) error { return domain.URLNotAllowed("webhook_url", host) }
		}, "url_not_allowed", "webhook_url"},
		{"redirect_url space", func(p *domain.NewParams) { p.RedirectURL = ptr("https://example.com/a b") }, "parameter_invalid", "redirect_url"},
		{"redirect_url backslash", func(p *domain.NewParams) { p.RedirectURL = ptr(`https://example.com\@evil.example`) }, "url_credentials_not_allowed", "redirect_url"},
		{"metadata value NUL", func(p *domain.NewParams) { p.Metadata = map[string]string{"k": "v\x00"} }, "parameter_invalid", "metadata[k]"},
		{"metadata key too long", func(p *domain.NewParams) { p.Metadata = map[string]string{strings.Repeat("k", 41): "v"} }, "parameter_invalid", "metadata[" + strings.Repeat("k", 41) + "]"},
		{"metadata key bracket", func(p *domain.NewParams) { p.Metadata = map[string]string{"a[b]": "v"} }, "parameter_invalid", "metadata[a[b]]"},
		{"metadata value too long", func(p *domain.NewParams) { p.Metadata = map[string]string{"k": *long(501)} }, "parameter_invalid", "metadata[k]"},
		{"metadata too many keys", func(p *domain.NewParams) {
			p.Metadata = map[string]string{}
			for i := range 51 {
				p.Metadata["k"+strings.Repeat("x", i)] = "v"
			}
		}, "parameter_invalid", "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid()
			tt.change(&p)
			_, err := domain.New(p)
			e := domainerr.As(err)
			if e == nil || e.Kind != domainerr.Invalid || e.Code != tt.code || e.Param != tt.param {
				t.Fatalf("New = %v; want %s naming %s", err, tt.code, tt.param)
			}
		})
	}
}

// The URLs are stored in the one URL parser's normal form.
func TestNewNormalizesURLs(t *testing.T) {
	p := valid()
	p.RedirectURL, p.WebhookURL = ptr("HTTPS://Shop.Example/Done?x=1"), ptr("https://HOOKS.example.com:8443/In")
	s, err := domain.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.RedirectURL() != "https://shop.example/Done?x=1" || s.WebhookURL() != "https://hooks.example.com:8443/In" {
		t.Fatalf("redirect_url %q webhook_url %q", s.RedirectURL(), s.WebhookURL())
	}
}

// A failed check's text must not repeat a megabyte of input.
func TestErrorsDoNotEchoLongInput(t *testing.T) {
	p := valid()
	p.Products = []string{strings.Repeat("x", 10_000)}
	_, err := domain.New(p)
	if e := domainerr.As(err); e == nil || len(e.Message) > 300 {
		t.Fatalf("error %v", err)
	}
}
