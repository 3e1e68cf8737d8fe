package domain_test

import (
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"

	"rentalplatform/collections-svc/internal/domain"
)

func ptr[T any](v T) *T { return &v }

var now = time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)

func validParams() domain.NewCaseParams {
	return domain.NewCaseParams{
		ID: "dc_0190a0b0-0000-7000-8000-000000000000", Account: "acct_1", Reference: "DC-7K3M9Q", Created: now,
		Partner:         domain.Partner{Name: "P", Email: "p@example.com", Phone: "+15555550100", Site: "https://p.example.com"},
		AmountToRecover: ptr(int64(120000)), Currency: ptr("EUR"),
		Debtor: &domain.DebtorParams{Type: ptr("company"), Name: ptr(" ACME GmbH "), Email: ptr("ap@acme.example"), Phone: ptr("+4930123456"),
			Address: &domain.AddressParams{Line1: ptr("Hauptstr. 1"), City: ptr("Berlin"), PostalCode: ptr("10115"), Country: ptr("de")},
			Country: ptr("DE")},
		DueDate: ptr("2026-10-31"), CreditorReference: ptr("INV-2026-0042"), Metadata: map[string]string{"unit": "4B"},
	}
}

func TestNewCase(t *testing.T) {
	c, err := domain.NewCase(validParams())
	if err != nil {
		t.Fatal(err)
	}
	s := c.State()
	if s.Status != domain.StatusActive || s.Remainder != 120000 || s.AmountToRecover != 120000 || s.CloseCode != "" ||
		s.Currency != "eur" || s.Debtor.Name != "ACME GmbH" || s.Debtor.Address.Country != "DE" || s.Debtor.ContactPerson != "" ||
		!s.DueDate.Equal(time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC)) || s.CreditorReference != "INV-2026-0042" ||
		s.Partner.Name != "P" || s.Metadata["unit"] != "4B" || !s.Created.Equal(now) || s.Reference != "DC-7K3M9Q" {
		t.Fatalf("case: %+v", s)
	}
	// Optional fields may be left out.
	p := validParams()
	p.Debtor.Email, p.Debtor.Phone, p.CreditorReference, p.Metadata = nil, nil, nil, nil
	if c, err := domain.NewCase(p); err != nil || c.Debtor().Email != "" || c.CreditorReference() != "" || len(c.Metadata()) != 0 {
		t.Fatalf("without optional fields: %v %+v", err, c)
	}
}

// TestNewCaseValidation: every parameter, missing and invalid, names itself.
func TestNewCaseValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*domain.NewCaseParams)
		code  string
		param string
	}{
		{"amount missing", func(p *domain.NewCaseParams) { p.AmountToRecover = nil }, "parameter_missing", "amount_to_recover"},
		{"amount zero", func(p *domain.NewCaseParams) { p.AmountToRecover = ptr(int64(0)) }, "parameter_invalid", "amount_to_recover"},
		{"amount negative", func(p *domain.NewCaseParams) { p.AmountToRecover = ptr(int64(-5)) }, "parameter_invalid", "amount_to_recover"},
		{"amount too large", func(p *domain.NewCaseParams) { p.AmountToRecover = ptr(domain.MaxAmount + 1) }, "parameter_invalid", "amount_to_recover"},
		{"currency missing", func(p *domain.NewCaseParams) { p.Currency = nil }, "parameter_missing", "currency"},
		{"currency unknown", func(p *domain.NewCaseParams) { p.Currency = ptr("EUX") }, "parameter_invalid", "currency"},
		{"currency empty", func(p *domain.NewCaseParams) { p.Currency = ptr("") }, "parameter_invalid", "currency"},
		{"debtor missing", func(p *domain.NewCaseParams) { p.Debtor = nil }, "parameter_missing", "debtor"},
		{"debtor.type missing", func(p *domain.NewCaseParams) { p.Debtor.Type = nil }, "parameter_missing", "debtor.type"},
		{"debtor.type unknown", func(p *domain.NewCaseParams) { p.Debtor.Type = ptr("person") }, "parameter_invalid", "debtor.type"},
		{"debtor.name missing", func(p *domain.NewCaseParams) { p.Debtor.Name = nil }, "parameter_missing", "debtor.name"},
		{"debtor.name blank", func(p *domain.NewCaseParams) { p.Debtor.Name = ptr("  ") }, "parameter_invalid", "debtor.name"},
		{"debtor.name control", func(p *domain.NewCaseParams) { p.Debtor.Name = ptr("A\x00B") }, "parameter_invalid", "debtor.name"},
		{"debtor.name line feed", func(p *domain.NewCaseParams) { p.Debtor.Name = ptr("A\nB") }, "parameter_invalid", "debtor.name"},
		{"debtor.name line separator", func(p *domain.NewCaseParams) { p.Debtor.Name = ptr("A\u2028B") }, "parameter_invalid", "debtor.name"},
		{"debtor.name invalid UTF-8", func(p *domain.NewCaseParams) { p.Debtor.Name = ptr("A\xffB") }, "parameter_invalid", "debtor.name"},
		{"debtor.address.line1 DEL", func(p *domain.NewCaseParams) { p.Debtor.Address.Line1 = ptr("Main St\x7f") }, "parameter_invalid", "debtor.address.line1"},
		{"creditor_reference C1", func(p *domain.NewCaseParams) { p.CreditorReference = ptr("INV\u0085") }, "parameter_invalid", "creditor_reference"},
		{"metadata value NUL", func(p *domain.NewCaseParams) { p.Metadata = map[string]string{"unit": "4\x00B"} }, "parameter_invalid", "metadata[unit]"},
		{"debtor.name too long", func(p *domain.NewCaseParams) { p.Debtor.Name = ptr(strings.Repeat("é", domain.MaxNameLen+1)) }, "parameter_invalid", "debtor.name"},
		{"debtor.email invalid", func(p *domain.NewCaseParams) { p.Debtor.Email = ptr("not-an-email") }, "parameter_invalid", "debtor.email"},
		{"debtor.phone not E.164", func(p *domain.NewCaseParams) { p.Debtor.Phone = ptr("030 123456") }, "parameter_invalid", "debtor.phone"},
		{"debtor.address missing", func(p *domain.NewCaseParams) { p.Debtor.Address = nil }, "parameter_missing", "debtor.address"},
		{"debtor.address.line1 missing", func(p *domain.NewCaseParams) { p.Debtor.Address.Line1 = nil }, "parameter_missing", "debtor.address.line1"},
		{"debtor.address.line1 blank", func(p *domain.NewCaseParams) { p.Debtor.Address.Line1 = ptr("") }, "parameter_invalid", "debtor.address.line1"},
		{"debtor.address.city missing", func(p *domain.NewCaseParams) { p.Debtor.Address.City = nil }, "parameter_missing", "debtor.address.city"},
		{"debtor.address.city too long", func(p *domain.NewCaseParams) { p.Debtor.Address.City = ptr(strings.Repeat("x", domain.MaxCityLen+1)) }, "parameter_invalid", "debtor.address.city"},
		{"debtor.address.postal_code missing", func(p *domain.NewCaseParams) { p.Debtor.Address.PostalCode = nil }, "parameter_missing", "debtor.address.postal_code"},
		{"debtor.address.postal_code too long", func(p *domain.NewCaseParams) {
			p.Debtor.Address.PostalCode = ptr(strings.Repeat("1", domain.MaxPostalCodeLen+1))
		}, "parameter_invalid", "debtor.address.postal_code"},
		{"debtor.address.country missing", func(p *domain.NewCaseParams) { p.Debtor.Address.Country = nil }, "parameter_missing", "debtor.address.country"},
		{"debtor.address.country unknown", func(p *domain.NewCaseParams) { p.Debtor.Address.Country = ptr("XX") }, "parameter_invalid", "debtor.address.country"},
		{"debtor.country missing", func(p *domain.NewCaseParams) { p.Debtor.Country = nil }, "parameter_missing", "debtor.country"},
		{"debtor.country alpha-3", func(p *domain.NewCaseParams) { p.Debtor.Country = ptr("DEU") }, "parameter_invalid", "debtor.country"},
		{"due_date missing", func(p *domain.NewCaseParams) { p.DueDate = nil }, "parameter_missing", "due_date"},
		{"due_date shape", func(p *domain.NewCaseParams) { p.DueDate = ptr("31.10.2026") }, "parameter_invalid", "due_date"},
		{"due_date not a day", func(p *domain.NewCaseParams) { p.DueDate = ptr("2026-02-30") }, "parameter_invalid", "due_date"},
		{"due_date in the future", func(p *domain.NewCaseParams) { p.DueDate = ptr("2026-11-26") }, "parameter_invalid", "due_date"},
		{"due_date before 1900", func(p *domain.NewCaseParams) { p.DueDate = ptr("1899-12-31") }, "parameter_invalid", "due_date"},
		{"creditor_reference blank", func(p *domain.NewCaseParams) { p.CreditorReference = ptr(" ") }, "parameter_invalid", "creditor_reference"},
		{"creditor_reference too long", func(p *domain.NewCaseParams) {
			p.CreditorReference = ptr(strings.Repeat("r", domain.MaxReferenceLen+1))
		}, "parameter_invalid", "creditor_reference"},
		{"metadata key too long", func(p *domain.NewCaseParams) { p.Metadata = map[string]string{strings.Repeat("k", 41): "v"} }, "parameter_invalid", "metadata[" + strings.Repeat("k", 41) + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validParams()
			tc.edit(&p)
			_, err := domain.NewCase(p)
			e := domainerr.As(err)
			if e == nil || e.Kind != domainerr.Invalid || e.Code != tc.code || e.Param != tc.param {
				t.Fatalf("err = %v; want %s on %s", err, tc.code, tc.param)
			}
		})
	}
	// Tomorrow (UTC) is still today somewhere east of UTC.
	p := validParams()
	p.DueDate = ptr("2026-11-25")
	if _, err := domain.NewCase(p); err != nil {
		t.Fatalf("due date of tomorrow (UTC): %v", err)
	}
}

func newCase(t *testing.T) *domain.Case {
	t.Helper()
	c, err := domain.NewCase(validParams())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantInvalidState(t *testing.T, err error) {
	t.Helper()
	if e := domainerr.As(err); e == nil || e.Kind != domainerr.Invalid || e.Code != domainerr.CodeInvalidState {
		t.Fatalf("err = %v; want 400 invalid_state", err)
	}
}

// TestLifecycle walks every move from every status the API can reach.
func TestLifecycle(t *testing.T) {
	type move struct {
		name string
		do   func(*domain.Case) error
	}
	pause := move{"pause", (*domain.Case).Pause}
	resume := move{"resume", (*domain.Case).Resume}
	closeIt := move{"close", func(c *domain.Case) error { return c.Close(domain.CloseSettled) }}
	for _, tc := range []struct {
		from   []move // how to reach the starting status
		move   move
		status domain.Status // "" : refused
	}{
		{nil, pause, domain.StatusPaused},
		{nil, resume, ""},
		{nil, closeIt, domain.StatusClosed},
		{[]move{pause}, pause, ""},
		{[]move{pause}, resume, domain.StatusActive},
		{[]move{pause}, closeIt, domain.StatusClosed},
		{[]move{closeIt}, pause, ""},
		{[]move{closeIt}, resume, ""},
		{[]move{closeIt}, closeIt, ""},
		{[]move{pause, closeIt}, resume, ""},
	} {
		c := newCase(t)
		for _, m := range tc.from {
			if err := m.do(c); err != nil {
				t.Fatal(err)
			}
		}
		before := c.State()
		err := tc.move.do(c)
		if tc.status == "" {
			wantInvalidState(t, err)
			if c.Status() != before.Status || c.CloseCode() != before.CloseCode {
				t.Errorf("a refused %s changed the case", tc.move.name)
			}
			continue
		}
		if err != nil || c.Status() != tc.status {
			t.Errorf("%s from %s: %v, status %s; want %s", tc.move.name, before.Status, err, c.Status(), tc.status)
		}
	}
	c := newCase(t)
	if err := c.Close(domain.CloseDisputed); err != nil || c.CloseCode() != domain.CloseDisputed {
		t.Fatalf("close: %v %s", err, c.CloseCode())
	}
	// Reserved statuses take no move.
	for _, s := range []domain.Status{domain.StatusPendingVerification, domain.StatusNeedsDetails} {
		st := newCase(t).State()
		st.Status = s
		r := domain.RehydrateCase(st)
		wantInvalidState(t, r.Pause())
		wantInvalidState(t, r.Resume())
		wantInvalidState(t, r.Close(domain.CloseWithdrawn))
		_, err := r.RecordPayment(domain.PaymentParams{Amount: ptr(int64(1)), PaidAt: ptr("2026-11-01"), Created: now})
		wantInvalidState(t, err)
	}
}

func TestParseCloseCode(t *testing.T) {
	for _, code := range domain.CloseCodes {
		if got, err := domain.ParseCloseCode("close_code", ptr(string(code))); err != nil || got != code {
			t.Errorf("%s: %v", code, err)
		}
	}
	for _, tc := range []struct {
		in   *string
		code string
	}{{nil, "parameter_missing"}, {ptr("paid"), "parameter_invalid"}, {ptr(""), "parameter_invalid"}} {
		if _, err := domain.ParseCloseCode("close_code", tc.in); domainerr.CodeOf(err) != tc.code || domainerr.As(err).Param != "close_code" {
			t.Errorf("ParseCloseCode(%v) = %v; want %s", tc.in, err, tc.code)
		}
	}
}

func TestPayments(t *testing.T) {
	pay := func(c *domain.Case, amount int64) (domain.Payment, error) {
		return c.RecordPayment(domain.PaymentParams{ID: "dpay_1", Created: now, Amount: ptr(amount), PaidAt: ptr("2026-11-20"), Reference: ptr(" bank-42 ")})
	}
	t.Run("validation", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			p     domain.PaymentParams
			code  string
			param string
		}{
			{"amount missing", domain.PaymentParams{PaidAt: ptr("2026-11-20")}, "parameter_missing", "amount"},
			{"amount zero", domain.PaymentParams{Amount: ptr(int64(0)), PaidAt: ptr("2026-11-20")}, "parameter_invalid", "amount"},
			{"amount above remainder", domain.PaymentParams{Amount: ptr(int64(120001)), PaidAt: ptr("2026-11-20")}, domain.CodePaymentTooLarge, "amount"},
			{"paid_at missing", domain.PaymentParams{Amount: ptr(int64(1))}, "parameter_missing", "paid_at"},
			{"paid_at shape", domain.PaymentParams{Amount: ptr(int64(1)), PaidAt: ptr("20.11.2026")}, "parameter_invalid", "paid_at"},
			{"paid_at future", domain.PaymentParams{Amount: ptr(int64(1)), PaidAt: ptr("2027-01-01")}, "parameter_invalid", "paid_at"},
			{"reference blank", domain.PaymentParams{Amount: ptr(int64(1)), PaidAt: ptr("2026-11-20"), Reference: ptr("")}, "parameter_invalid", "reference"},
		} {
			c := newCase(t)
			tc.p.Created = now
			_, err := c.RecordPayment(tc.p)
			if e := domainerr.As(err); e == nil || e.Code != tc.code || e.Param != tc.param {
				t.Errorf("%s: %v; want %s on %s", tc.name, err, tc.code, tc.param)
			}
			if c.Remainder() != 120000 || len(c.Payments()) != 0 {
				t.Errorf("%s: a refused payment changed the case", tc.name)
			}
		}
	})
	t.Run("retried under its Idempotency-Key", func(t *testing.T) {
		c := newCase(t)
		params := domain.PaymentParams{ID: "dpay_1", Key: "k-1", Created: now, Amount: ptr(int64(120000)), PaidAt: ptr("2026-11-20")}
		first, err := c.RecordPayment(params)
		if err != nil || c.Status() != domain.StatusClosed {
			t.Fatalf("first: %v, %s", err, c.Status())
		}
		raised := len(c.Raised())
		// The retry comes with another id from the application, after the first closed the case.
		params.ID = "dpay_2"
		again, err := c.RecordPayment(params)
		if err != nil || again != first || len(c.Payments()) != 1 || c.Remainder() != 0 || len(c.Raised()) != raised {
			t.Fatalf("retry: %v, %+v (first %+v), %d payments, remainder %d, %d events raised (were %d)",
				err, again, first, len(c.Payments()), c.Remainder(), len(c.Raised()), raised)
		}
		// Another key is another payment (here refused: the case is closed).
		params.Key = "k-2"
		if _, err := c.RecordPayment(params); domainerr.As(err) == nil || domainerr.As(err).Code != "invalid_state" {
			t.Fatalf("another key on the closed case: %v", err)
		}
	})
	t.Run("to zero", func(t *testing.T) {
		c := newCase(t)
		p, err := pay(c, 20000)
		if err != nil || c.Remainder() != 100000 || c.Status() != domain.StatusActive || p.Reference != "bank-42" ||
			!p.PaidAt.Equal(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("first payment: %v %+v remainder %d", err, p, c.Remainder())
		}
		if err := c.Pause(); err != nil {
			t.Fatal(err)
		}
		// A paused case still takes payments, and the last one closes it.
		if _, err := pay(c, 100000); err != nil || c.Remainder() != 0 || c.Status() != domain.StatusClosed || c.CloseCode() != domain.ClosePaidInFull {
			t.Fatalf("last payment: %v, remainder %d, %s/%s", err, c.Remainder(), c.Status(), c.CloseCode())
		}
		if len(c.Payments()) != 2 {
			t.Fatalf("payments: %v", c.Payments())
		}
		_, err = pay(c, 1)
		wantInvalidState(t, err)
	})
	t.Run("closed by hand", func(t *testing.T) {
		c := newCase(t)
		if err := c.Close(domain.CloseWithdrawn); err != nil {
			t.Fatal(err)
		}
		_, err := pay(c, 1)
		wantInvalidState(t, err)
	})
	t.Run("limit", func(t *testing.T) {
		st := newCase(t).State()
		st.Payments = make([]domain.Payment, domain.MaxPayments)
		c := domain.RehydrateCase(st)
		if _, err := pay(c, 1); domainerr.CodeOf(err) != domain.CodePaymentLimit {
			t.Fatalf("payment beyond the limit: %v", err)
		}
	})
}

func TestReference(t *testing.T) {
	r := domain.NewReference([]byte{0, 1, 31, 32, 255, 100})
	if r != "DC-01Z0Z4" {
		t.Fatalf("NewReference = %s", r)
	}
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"DC-7K3M9Q", "DC-7K3M9Q", true},
		{"dc-7k3m9q", "DC-7K3M9Q", true},
		{"DC-7K3M9", "", false},
		{"DC-7K3M9QQ", "", false},
		{"DC-7K3MIQ", "", false}, // I is not in the alphabet
		{"XX-7K3M9Q", "", false},
		{"", "", false},
	} {
		got, ok := domain.ParseReference(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseReference(%q) = %q, %v", tc.in, got, ok)
		}
	}
}
