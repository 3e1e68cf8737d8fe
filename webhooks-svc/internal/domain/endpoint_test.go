package domain_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/validate"

	"rentalplatform/webhooks-svc/internal/domain"
)

func ptr[T any](v T) *T { return &v }

var created = time.Date(2026, 11, 2, 10, 30, 15, 999_000_000, time.UTC)

func validParams() domain.NewParams {
	return domain.NewParams{
		ID:            "we_0000000000000000000000000a",
		Account:       "acct_a",
		Livemode:      false,
		Secret:        "whsec_c2VjcmV0",
		Created:       created,
		URL:           "https://example.com/hooks",
		EnabledEvents: []string{"payment_request.succeeded"},
	}
}

func metadataOf(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%02d", i)] = "v"
	}
	return m
}

func TestNewDefaults(t *testing.T) {
	e, err := domain.New(validParams())
	if err != nil {
		t.Fatal(err)
	}
	if e.Status() != domain.StatusEnabled {
		t.Errorf("status = %s, want enabled", e.Status())
	}
	if e.APIVersion() != events.APIVersion {
		t.Errorf("api_version = %s, want %s", e.APIVersion(), events.APIVersion)
	}
	if e.Description() != "" || e.Metadata() == nil || len(e.Metadata()) != 0 {
		t.Errorf("description %q, metadata %v; want empty", e.Description(), e.Metadata())
	}
	if !e.Created().Equal(created.Truncate(time.Second)) {
		t.Errorf("created = %v, want whole seconds of %v", e.Created(), created)
	}
	if !e.OwnedBy("acct_a", false) || e.OwnedBy("acct_a", true) || e.OwnedBy("acct_b", false) {
		t.Error("OwnedBy wrong")
	}
}

func TestNewNormalizes(t *testing.T) {
	p := validParams()
	p.URL = "HTTPS://Example.com:8443/a?b=c"
	p.EnabledEvents = []string{"*", "payment_request.failed", "*", "payment_request.failed", "payment_request.succeeded"}
	p.Description = ptr("d")
	p.APIVersion = ptr(events.APIVersion)
	p.Metadata = map[string]string{"a": "1", "dropped": ""}
	e, err := domain.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"*", "payment_request.failed", "payment_request.succeeded"}; !slices.Equal(e.EnabledEvents(), want) {
		t.Errorf("enabled_events = %v, want %v (deduplicated, first order kept)", e.EnabledEvents(), want)
	}
	if want := map[string]string{"a": "1"}; !maps.Equal(e.Metadata(), want) {
		t.Errorf("metadata = %v, want %v", e.Metadata(), want)
	}
	// The URL is stored in the one parser's normal form: scheme and host in lower case.
	if e.URL() != "https://example.com:8443/a?b=c" || e.Description() != "d" {
		t.Errorf("url %q description %q", e.URL(), e.Description())
	}
}

// TestNewRefuses covers every input rule of create: the code and the parameter named.
func TestNewRefuses(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name   string
		change func(*domain.NewParams)
		code   string
		param  string
	}{
		{"url missing", func(p *domain.NewParams) { p.URL = "" }, "parameter_missing", "url"},
		{"url http", func(p *domain.NewParams) { p.URL = "http://example.com/hooks" }, "url_not_https", "url"},
		{"url ftp", func(p *domain.NewParams) { p.URL = "ftp://example.com" }, "url_not_https", "url"},
		{"url without scheme", func(p *domain.NewParams) { p.URL = "example.com/hooks" }, "url_not_https", "url"},
		{"url unparseable", func(p *domain.NewParams) { p.URL = "https://exa mple.com/" }, "parameter_invalid", "url"},
		{"url bad escape", func(p *domain.NewParams) { p.URL = "https://example.com/%zz" }, "parameter_invalid", "url"},
		{"url no host", func(p *domain.NewParams) { p.URL = "https:///hooks" }, "parameter_invalid", "url"},
		{"url only port", func(p *domain.NewParams) { p.URL = "https://:443/hooks" }, "parameter_invalid", "url"},
		{"url opaque", func(p *domain.NewParams) { p.URL = "https:example.com" }, "parameter_invalid", "url"},
		{"url too long", func(p *domain.NewParams) { p.URL = "https://example.com/" + long(domain.MaxURLLen) }, "parameter_invalid", "url"},
		{"url with a fragment", func(p *domain.NewParams) { p.URL = "https://example.com/hooks#x" }, "parameter_invalid", "url"},
		{"url with credentials", func(p *domain.NewParams) { p.URL = "https://u:p@example.com/hooks" }, "url_credentials_not_allowed", "url"},
		{"url with a raw non-ASCII path", func(p *domain.NewParams) { p.URL = "https://example.com/é" }, "parameter_invalid", "url"},
		{"url with a backslash", func(p *domain.NewParams) { p.URL = `https://example.com\hooks` }, "parameter_invalid", "url"},
		{"url with port 0", func(p *domain.NewParams) { p.URL = "https://example.com:0/hooks" }, "parameter_invalid", "url"},
		{"url refused by the host guard", func(p *domain.NewParams) {
			p.URL = "https://Internal.example/hooks"
			p.CheckHost = func(host string) error {
				if host != "internal.example" {
					t.Errorf("CheckHost(%q), want the normal form", host)
				}
				return domainerr.New(domainerr.Invalid, "url_not_allowed", "url", "Invalid url: internal.")
			}
		}, "url_not_allowed", "url"},
		{"events missing", func(p *domain.NewParams) { p.EnabledEvents = nil }, "parameter_missing", "enabled_events"},
		{"events empty", func(p *domain.NewParams) { p.EnabledEvents = []string{} }, "parameter_invalid", "enabled_events"},
		{"event unknown", func(p *domain.NewParams) { p.EnabledEvents = []string{"*", "payment_request.exploded"} }, "parameter_invalid", "enabled_events[1]"},
		{"event empty", func(p *domain.NewParams) { p.EnabledEvents = []string{""} }, "parameter_invalid", "enabled_events[0]"},
		{"event family pattern", func(p *domain.NewParams) { p.EnabledEvents = []string{"payment_request.*"} }, "parameter_invalid", "enabled_events[0]"},
		{"description too long", func(p *domain.NewParams) { p.Description = ptr(long(domain.MaxDescriptionLen + 1)) }, "parameter_invalid", "description"},
		{"description with NUL", func(p *domain.NewParams) { p.Description = ptr("a\x00b") }, "parameter_invalid", "description"},
		{"description with ESC", func(p *domain.NewParams) { p.Description = ptr("a\x1b[0m") }, "parameter_invalid", "description"},
		{"description with C1", func(p *domain.NewParams) { p.Description = ptr("a\u009b") }, "parameter_invalid", "description"},
		{"description invalid UTF-8", func(p *domain.NewParams) { p.Description = ptr("a\xff") }, "parameter_invalid", "description"},
		{"api_version empty", func(p *domain.NewParams) { p.APIVersion = ptr("") }, "parameter_invalid", "api_version"},
		{"api_version not a date", func(p *domain.NewParams) { p.APIVersion = ptr("v1") }, "parameter_invalid", "api_version"},
		{"api_version impossible date", func(p *domain.NewParams) { p.APIVersion = ptr("2026-02-30") }, "parameter_invalid", "api_version"},
		{"api_version unsupported", func(p *domain.NewParams) { p.APIVersion = ptr("2001-01-01") }, "parameter_invalid", "api_version"},
		{"metadata empty key", func(p *domain.NewParams) { p.Metadata = map[string]string{"": "v"} }, "parameter_invalid", "metadata"},
		{"metadata key too long", func(p *domain.NewParams) { p.Metadata = map[string]string{long(41): "v"} }, "parameter_invalid", "metadata[" + long(41) + "]"},
		{"metadata value too long", func(p *domain.NewParams) { p.Metadata = map[string]string{"k": long(501)} }, "parameter_invalid", "metadata[k]"},
		{"metadata key with NUL", func(p *domain.NewParams) { p.Metadata = map[string]string{"k\x00": "v"} }, "parameter_invalid", "metadata"},
		{"metadata value with NUL", func(p *domain.NewParams) { p.Metadata = map[string]string{"k": "v\x00"} }, "parameter_invalid", "metadata[k]"},
		{"metadata too many keys", func(p *domain.NewParams) { p.Metadata = metadataOf(51) }, "parameter_invalid", "metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validParams()
			tc.change(&p)
			_, err := domain.New(p)
			assertInvalid(t, err, tc.code, tc.param)
		})
	}
}

// TestNewAcceptsLimits checks each limit is inclusive.
func TestNewAcceptsLimits(t *testing.T) {
	p := validParams()
	p.URL = "https://example.com/" + strings.Repeat("a", domain.MaxURLLen-len("https://example.com/"))
	p.Description = ptr(strings.Repeat("é", domain.MaxDescriptionLen))
	p.Metadata = metadataOf(validate.MaxMetadataKeys)
	p.Metadata[strings.Repeat("k", validate.MaxMetadataKeyLen)] = strings.Repeat("v", validate.MaxMetadataValueLen)
	delete(p.Metadata, "k00")
	if _, err := domain.New(p); err != nil {
		t.Fatal(err)
	}
}

func TestUpdate(t *testing.T) {
	p := validParams()
	p.Description = ptr("old")
	p.Metadata = map[string]string{"keep": "1", "drop": "2", "change": "3"}
	e, _ := domain.New(p)
	err := e.Update(domain.Changes{
		URL:           ptr("HTTPS://EXAMPLE.org/new"),
		EnabledEvents: []string{"payment_request.failed", "payment_request.failed"},
		Status:        ptr("disabled"),
		Description:   ptr(""),
		Metadata:      map[string]string{"drop": "", "change": "30", "add": "4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e.URL() != "https://example.org/new" || !slices.Equal(e.EnabledEvents(), []string{"payment_request.failed"}) ||
		e.Status() != domain.StatusDisabled || e.Description() != "" {
		t.Fatalf("after update: %+v", e.State())
	}
	if want := map[string]string{"keep": "1", "change": "30", "add": "4"}; !maps.Equal(e.Metadata(), want) {
		t.Fatalf("metadata = %v, want %v", e.Metadata(), want)
	}
	// An empty change set changes nothing.
	before := e.State()
	if err := e.Update(domain.Changes{}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(e.State()) != fmt.Sprint(before) {
		t.Fatalf("empty update changed %+v to %+v", before, e.State())
	}
}

func TestStatusTransitions(t *testing.T) {
	e, _ := domain.New(validParams())
	for _, step := range []struct {
		status string
		want   domain.Status
	}{{"disabled", domain.StatusDisabled}, {"disabled", domain.StatusDisabled}, {"enabled", domain.StatusEnabled}, {"enabled", domain.StatusEnabled}} {
		if err := e.Update(domain.Changes{Status: ptr(step.status)}); err != nil || e.Status() != step.want {
			t.Fatalf("status %s: got %s, %v", step.status, e.Status(), err)
		}
	}
	e.Disable()
	if e.Status() != domain.StatusDisabled {
		t.Fatal("Disable")
	}
	e.Enable()
	if e.Status() != domain.StatusEnabled {
		t.Fatal("Enable")
	}
}

// TestUpdateRefuses covers every input rule of update, and that a refused update changes
// nothing even when other fields in it were valid.
func TestUpdateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes domain.Changes
		code    string
		param   string
	}{
		{"url empty", domain.Changes{URL: ptr("")}, "parameter_invalid", "url"},
		{"url http", domain.Changes{URL: ptr("http://example.com")}, "url_not_https", "url"},
		{"url no host", domain.Changes{URL: ptr("https://")}, "parameter_invalid", "url"},
		{"url with a fragment", domain.Changes{URL: ptr("https://example.com/#f")}, "parameter_invalid", "url"},
		{"description with NUL", domain.Changes{Description: ptr("\x00")}, "parameter_invalid", "description"},
		{"events empty", domain.Changes{EnabledEvents: []string{}}, "parameter_invalid", "enabled_events"},
		{"event unknown", domain.Changes{EnabledEvents: []string{"nope"}}, "parameter_invalid", "enabled_events[0]"},
		{"status unknown", domain.Changes{Status: ptr("paused")}, "parameter_invalid", "status"},
		{"status empty", domain.Changes{Status: ptr("")}, "parameter_invalid", "status"},
		{"description too long", domain.Changes{Description: ptr(strings.Repeat("x", 5001))}, "parameter_invalid", "description"},
		{"metadata value too long", domain.Changes{Metadata: map[string]string{"k": strings.Repeat("x", 501)}}, "parameter_invalid", "metadata[k]"},
		{"metadata merged over limit", domain.Changes{Metadata: metadataOf(50)}, "parameter_invalid", "metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validParams()
			p.Metadata = map[string]string{"existing": "1"}
			e, _ := domain.New(p)
			before := fmt.Sprint(e.State())
			c := tc.changes
			c.Description = cmpOr(c.Description, ptr("valid change that must not land"))
			err := e.Update(c)
			assertInvalid(t, err, tc.code, tc.param)
			if got := fmt.Sprint(e.State()); got != before {
				t.Fatalf("refused update changed the endpoint:\n%s\n%s", before, got)
			}
		})
	}
}

func TestUpdateMetadataAtLimit(t *testing.T) {
	p := validParams()
	p.Metadata = metadataOf(50)
	e, _ := domain.New(p)
	// Removing one key and adding another keeps the count at the limit.
	if err := e.Update(domain.Changes{Metadata: map[string]string{"k00": "", "new": "v"}}); err != nil {
		t.Fatal(err)
	}
	if len(e.Metadata()) != 50 {
		t.Fatalf("%d keys", len(e.Metadata()))
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	p := validParams()
	p.Metadata = map[string]string{"a": "1"}
	e, _ := domain.New(p)
	e.EnabledEvents()[0] = "mutated"
	e.Metadata()["a"] = "mutated"
	if e.EnabledEvents()[0] == "mutated" || e.Metadata()["a"] == "mutated" {
		t.Fatal("accessor leaked internal state")
	}
}

func TestRehydrateRoundTrip(t *testing.T) {
	p := validParams()
	p.Description = ptr("d")
	p.Metadata = map[string]string{"a": "1"}
	e, _ := domain.New(p)
	e.Disable()
	got := domain.Rehydrate(e.State())
	if fmt.Sprint(got.State()) != fmt.Sprint(e.State()) {
		t.Fatalf("%+v\n%+v", got.State(), e.State())
	}
}

func TestNotFoundIs(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", domain.ErrNotFound)
	if !errors.Is(err, domain.ErrNotFound) || errors.Is(err, domainerr.ErrLockTimeout) {
		t.Fatal("errors.Is on domain errors")
	}
	if de := domainerr.As(err); de == nil || de.Kind != domainerr.NotFound {
		t.Fatal("domainerr.As")
	}
	// An id-carrying error matches its own type's sentinel only.
	ep := domain.EndpointNotFound("we_1")
	if !errors.Is(ep, domain.ErrNotFound) || errors.Is(ep, domain.ErrEventNotFound) {
		t.Fatal("EndpointNotFound matches the wrong sentinels")
	}
	if de := domainerr.As(ep); de.Param != "id" || de.Message != "No such webhook_endpoint: 'we_1'" {
		t.Fatalf("EndpointNotFound = %+v", de)
	}
}

func assertInvalid(t *testing.T, err error, code, param string) {
	t.Helper()
	de := domainerr.As(err)
	if de == nil {
		t.Fatalf("err = %v, want a domain error %s on %s", err, code, param)
	}
	if de.Kind != domainerr.Invalid || de.Code != code || de.Param != param || de.Message == "" {
		t.Fatalf("got kind %d code %s param %q (%s); want invalid %s on %q", de.Kind, de.Code, de.Param, de.Message, code, param)
	}
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}
