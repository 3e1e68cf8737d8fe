package domain

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
)

func ptr[T any](v T) *T { return &v }

var created = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func method(typ, token string, preferred bool) MethodParams {
	return MethodParams{ID: "pm_" + token, Type: &typ, Token: &token, Preferred: &preferred}
}

func validAgreement() NewAgreementParams {
	return NewAgreementParams{
		ID: "pa_1", Account: "acct_1", Created: created,
		TenantGiven: true, TenantName: ptr("Ada Lovelace"), TenantEmail: ptr("ada@example.com"),
		Methods: []MethodParams{method("card", "tok_test_success", true)},
	}
}

func TestNewAgreementValidation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		change      func(*NewAgreementParams)
		code, param string
	}{
		{"no tenant", func(p *NewAgreementParams) { p.TenantGiven = false }, "parameter_missing", "tenant"},
		{"no name", func(p *NewAgreementParams) { p.TenantName = nil }, "parameter_missing", "tenant.name"},
		{"blank name", func(p *NewAgreementParams) { p.TenantName = ptr("  ") }, "parameter_invalid", "tenant.name"},
		{"long name", func(p *NewAgreementParams) { p.TenantName = ptr(strings.Repeat("a", MaxNameLen+1)) }, "parameter_invalid", "tenant.name"},
		{"NUL in name", func(p *NewAgreementParams) { p.TenantName = ptr("Ada\x00Lovelace") }, "parameter_invalid", "tenant.name"},
		{"line feed in name", func(p *NewAgreementParams) { p.TenantName = ptr("Ada\nLovelace") }, "parameter_invalid", "tenant.name"},
		{"C1 control in name", func(p *NewAgreementParams) { p.TenantName = ptr("Ada\u009bLovelace") }, "parameter_invalid", "tenant.name"},
		{"invalid UTF-8 in name", func(p *NewAgreementParams) { p.TenantName = ptr("Ada \xff") }, "parameter_invalid", "tenant.name"},
		{"no email", func(p *NewAgreementParams) { p.TenantEmail = nil }, "parameter_missing", "tenant.email"},
		{"bad email", func(p *NewAgreementParams) { p.TenantEmail = ptr("ada@") }, "parameter_invalid", "tenant.email"},
		{"no methods", func(p *NewAgreementParams) { p.Methods = nil }, "parameter_missing", "payment_methods"},
		{"empty methods", func(p *NewAgreementParams) { p.Methods = []MethodParams{} }, "parameter_invalid", "payment_methods"},
		{"six methods", func(p *NewAgreementParams) {
			p.Methods = []MethodParams{method("card", "a", true), method("card", "b", false), method("card", "c", false),
				method("card", "d", false), method("card", "e", false), method("card", "f", false)}
		}, "parameter_invalid", "payment_methods"},
		{"no type", func(p *NewAgreementParams) { p.Methods[0].Type = nil }, "parameter_missing", "payment_methods[0].type"},
		{"bad type", func(p *NewAgreementParams) { p.Methods[0].Type = ptr("paypal") }, "parameter_invalid", "payment_methods[0].type"},
		{"no token", func(p *NewAgreementParams) { p.Methods[0].Token = nil }, "parameter_missing", "payment_methods[0].token"},
		{"empty token", func(p *NewAgreementParams) { p.Methods[0].Token = ptr("") }, "parameter_invalid", "payment_methods[0].token"},
		{"token with a space", func(p *NewAgreementParams) { p.Methods[0].Token = ptr("tok x") }, "parameter_invalid", "payment_methods[0].token"},
		{"none preferred", func(p *NewAgreementParams) { p.Methods[0].Preferred = ptr(false) }, "parameter_invalid", "payment_methods"},
		{"two preferred", func(p *NewAgreementParams) {
			p.Methods = append(p.Methods, method("sepa_debit", "tok_2", true))
		}, "parameter_invalid", "payment_methods[1].preferred"},
		{"acceptance without accepted_at", func(p *NewAgreementParams) { p.Acceptance = &AcceptanceParams{} }, "parameter_missing", "acceptance.accepted_at"},
		{"acceptance in the future", func(p *NewAgreementParams) {
			p.Acceptance = &AcceptanceParams{AcceptedAt: ptr(created.Add(time.Hour).Unix())}
		}, "parameter_invalid", "acceptance.accepted_at"},
		{"bad ip", func(p *NewAgreementParams) {
			p.Acceptance = &AcceptanceParams{AcceptedAt: ptr(created.Unix()), IPAddress: ptr("10.0.0")}
		}, "parameter_invalid", "acceptance.ip_address"},
		{"empty user agent", func(p *NewAgreementParams) {
			p.Acceptance = &AcceptanceParams{AcceptedAt: ptr(created.Unix()), UserAgent: ptr("")}
		}, "parameter_invalid", "acceptance.user_agent"},
		{"user agent with DEL", func(p *NewAgreementParams) {
			p.Acceptance = &AcceptanceParams{AcceptedAt: ptr(created.Unix()), UserAgent: ptr("Mozilla\x7f")}
		}, "parameter_invalid", "acceptance.user_agent"},
		{"NUL in a metadata value", func(p *NewAgreementParams) { p.Metadata = map[string]string{"a": "b\x00"} }, "parameter_invalid", "metadata[a]"},
		{"bad metadata", func(p *NewAgreementParams) { p.Metadata = map[string]string{"a[b]": "c"} }, "parameter_invalid", "metadata[a[b]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validAgreement()
			tc.change(&p)
			_, err := NewAgreement(p)
			e := domainerr.As(err)
			if e == nil || e.Code != tc.code || e.Param != tc.param {
				t.Fatalf("NewAgreement = %v; want %s naming %s", err, tc.code, tc.param)
			}
		})
	}
}

func TestNewAgreementOrdersThePreferredMethodFirst(t *testing.T) {
	p := validAgreement()
	p.Methods = []MethodParams{method("card", "tok_a", false), method("sepa_debit", "tok_b", true), method("ach_debit", "tok_c", false)}
	p.Acceptance = &AcceptanceParams{AcceptedAt: ptr(created.Unix()), IPAddress: ptr("2001:db8::1"), UserAgent: ptr("curl/8")}
	p.Metadata = map[string]string{"unit": "4B", "empty": ""}
	a, err := NewAgreement(p)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range a.Methods() {
		order = append(order, m.Token)
	}
	if order[0] != "tok_b" || order[1] != "tok_a" || order[2] != "tok_c" {
		t.Fatalf("order %v; want the preferred first, then the order given", order)
	}
	if a.Status() != AgreementActive || a.Cascading() || len(a.Metadata()) != 1 || a.AcceptanceEvidence().IPAddress != "2001:db8::1" {
		t.Fatalf("agreement %+v", a.State())
	}
	if m := a.Methods()[0]; m.Last4() != "ok_b" || m.Status != MethodActive {
		t.Fatalf("method %+v, last4 %q", m, m.Last4())
	}
}

func TestAgreementTransitions(t *testing.T) {
	p := validAgreement()
	p.Methods = []MethodParams{method("card", "tok_a", true), method("card", "tok_b", false)}
	a, err := NewAgreement(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := raised(a); got != "[{payment_agreement.created <nil> false}]" {
		t.Fatalf("a new agreement raised %s", got)
	}
	declined := Try{Method: "pm_tok_a", FailureCode: "declined"}
	if !a.FailMethods([]Try{declined, {Method: "pm_none", FailureCode: "x"}}) || a.FailMethods([]Try{declined}) || a.FailMethods(nil) {
		t.Fatal("FailMethods reports a change only for an active method of the agreement")
	}
	if got := raised(a); got != "[{payment_agreement.created <nil> false} {payment_agreement.updated <nil> true}]" {
		t.Fatalf("failing a method raised %s; want one update", got)
	}
	if u := a.UsableMethods(); len(u) != 1 || u[0].ID != "pm_tok_b" {
		t.Fatalf("usable %v; want the second method only", u)
	}
	if m := a.Methods()[0]; m.Status != MethodFailed || m.FailureCode != "declined" {
		t.Fatalf("failed method %+v", m)
	}
	if !a.Cancel(created.Add(time.Minute)) || a.Active() || !a.Cascading() || !a.CancelledAt().Equal(created.Add(time.Minute)) {
		t.Fatalf("after cancel: %+v", a.State())
	}
	if a.Cancel(created.Add(time.Hour)) || !a.CancelledAt().Equal(created.Add(time.Minute)) {
		t.Fatal("a second cancel changed the agreement")
	}
	if got := raised(a); got != "[{payment_agreement.created <nil> false} {payment_agreement.updated <nil> true} {payment_agreement.cancelled <nil> true}]" {
		t.Fatalf("cancelling raised %s; want one cancelled, with previous_attributes", got)
	}
	a.CascadeDone()
	if a.Cascading() {
		t.Fatal("cascade not done")
	}
	if b := RehydrateAgreement(a.State()); b.State().Status != AgreementCancelled || len(b.Methods()) != 2 || len(b.Raised()) != 0 {
		t.Fatalf("rehydrated %+v, raised %v", b.State(), b.Raised())
	}
}

// raised shows the events an aggregate raised, in order.
func raised(a interface{ Raised() []events.Raised }) string { return fmt.Sprint(a.Raised()) }
