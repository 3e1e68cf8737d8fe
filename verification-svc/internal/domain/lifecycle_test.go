package domain_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"

	"rentalplatform/verification-svc/internal/domain"
)

// at is the fake clock: minutes after the session's creation.
func at(min int) time.Time { return now.Add(time.Duration(min) * time.Minute) }

// newSession returns a created session as stored and read back: its creation event is gone
// with the write.
func newSession(t *testing.T) *domain.Session {
	t.Helper()
	s, err := domain.New(valid())
	if err != nil {
		t.Fatal(err)
	}
	return stored(s)
}

// stored returns s as the repository reads it back after storing it with its events: the same
// state, nothing raised.
func stored(s *domain.Session) *domain.Session { return domain.Rehydrate(s.State()) }

// raised returns the types of the events s raised, in order.
func raised(s *domain.Session) []string {
	var out []string
	for _, r := range s.Raised() {
		out = append(out, r.Type)
	}
	return out
}

// reach drives a new session to status along the lifecycle.
func reach(t *testing.T, status domain.Status) *domain.Session {
	t.Helper()
	s := newSession(t)
	steps := map[domain.Status][]domain.Status{
		domain.StatusCreated:    nil,
		domain.StatusPending:    {domain.StatusPending},
		domain.StatusProcessing: {domain.StatusPending, domain.StatusProcessing},
		domain.StatusCompleted:  {domain.StatusPending, domain.StatusProcessing, domain.StatusCompleted},
		domain.StatusFailed:     {domain.StatusPending, domain.StatusProcessing, domain.StatusFailed},
		domain.StatusExpired:    {domain.StatusPending, domain.StatusExpired},
		domain.StatusCanceled:   {domain.StatusPending},
	}[status]
	for i, st := range steps {
		if err := s.Apply(at(i+1), domain.Advance{To: st}); err != nil {
			t.Fatalf("reach %s: %s: %v", status, st, err)
		}
	}
	if status == domain.StatusCanceled {
		if _, err := s.Cancel(at(9), domain.CancelOther); err != nil {
			t.Fatal(err)
		}
	}
	return stored(s)
}

func wantInvalidState(t *testing.T, err error) {
	t.Helper()
	e := domainerr.As(err)
	if e == nil || e.Kind != domainerr.Invalid || e.Code != "invalid_state" {
		t.Fatalf("err = %v; want 400 invalid_state", err)
	}
}

// TestAdvanceEdges tries every move from every status: only the lifecycle's edges are taken,
// each raising its event(s); every other move is refused with 400 invalid_state and changes
// nothing.
func TestAdvanceEdges(t *testing.T) {
	allowed := map[[2]domain.Status][]string{
		{domain.StatusCreated, domain.StatusPending}:      {eventtype.VerificationSessionPending},
		{domain.StatusCreated, domain.StatusExpired}:      {eventtype.VerificationSessionExpired},
		{domain.StatusPending, domain.StatusProcessing}:   {eventtype.VerificationSessionProcessing},
		{domain.StatusPending, domain.StatusExpired}:      {eventtype.VerificationSessionExpired},
		{domain.StatusProcessing, domain.StatusCompleted}: {eventtype.VerificationReportCreated, eventtype.VerificationSessionCompleted},
		{domain.StatusProcessing, domain.StatusFailed}:    {eventtype.VerificationSessionFailed},
	}
	targets := []domain.Status{domain.StatusPending, domain.StatusProcessing, domain.StatusCompleted, domain.StatusFailed, domain.StatusExpired}
	for _, from := range domain.AllStatuses {
		for _, to := range targets {
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				s := reach(t, from)
				before := s.State()
				err := s.Apply(at(30), domain.Advance{To: to})
				want, ok := allowed[[2]domain.Status{from, to}]
				if !ok {
					wantInvalidState(t, err)
					if got := s.State(); got.Status != before.Status || len(s.Raised()) != 0 {
						t.Fatalf("a refused move changed the session: %+v", got)
					}
					return
				}
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if s.Status() != to || !slices.Equal(raised(s), want) {
					t.Fatalf("status %s, raised %v; want %s, %v", s.Status(), raised(s), to, want)
				}
			})
		}
	}
}

func TestCompleteMakesTheReport(t *testing.T) {
	s := reach(t, domain.StatusProcessing)
	if err := s.Complete(at(5), map[domain.Product]domain.ResultStatus{domain.ProductCredit: domain.ResultFailed}); err != nil {
		t.Fatal(err)
	}
	r := s.Report()
	if r == nil || r.ID != "vr_01kaj2c8v6f3q9ysq7m2d0w1xz" || r.Created != at(5).Truncate(time.Second) || len(r.Products) != 3 {
		t.Fatalf("report %+v", r)
	}
	for i, want := range []struct {
		p  domain.Product
		st domain.ResultStatus
		n  int
	}{{domain.ProductIdentity, domain.ResultPassed, 0}, {domain.ProductIncome, domain.ResultPassed, 0}, {domain.ProductCredit, domain.ResultFailed, 1}} {
		got := r.Products[i]
		if got.Product != want.p || got.Status != want.st || len(got.Reasons) != want.n {
			t.Errorf("product %d: %+v; want %+v", i, got, want)
		}
	}
	if s.LastError() != nil {
		t.Fatalf("a completed session has last_error %+v", s.LastError())
	}
	a := s.Attempts()
	if len(a) != 1 || a[0].Outcome != domain.StatusCompleted || a[0].StartedAt != at(1) || a[0].EndedAt != at(5) {
		t.Fatalf("attempts %+v", a)
	}
	if domain.SessionOfReport(r.ID) != s.ID() {
		t.Fatalf("report %s does not lead back to %s", r.ID, s.ID())
	}

	// An outcome for a product the session does not run is refused, naming it.
	s = reach(t, domain.StatusProcessing)
	err := s.Complete(at(5), map[domain.Product]domain.ResultStatus{domain.ProductDocuments: domain.ResultFailed})
	if e := domainerr.As(err); e == nil || e.Code != "parameter_invalid" || e.Param != "outcomes[documents]" || s.Status() != domain.StatusProcessing {
		t.Fatalf("err %v, status %s", err, s.Status())
	}
}

func TestFailSaysWhy(t *testing.T) {
	for _, tt := range []struct {
		name   string
		in     domain.FailParams
		code   domain.ErrorCode
		prod   domain.Product
		errPar string
	}{
		{"default: the first product's check", domain.FailParams{}, domain.ErrorIdentityMismatch, domain.ProductIdentity, ""},
		{"a product", domain.FailParams{Product: domain.ProductIncome}, domain.ErrorIncomeInsufficient, domain.ProductIncome, ""},
		{"a product's code names it", domain.FailParams{Code: domain.ErrorCreditCheckFailed}, domain.ErrorCreditCheckFailed, domain.ProductCredit, ""},
		{"consent declined has no product", domain.FailParams{Code: domain.ErrorConsentDeclined}, domain.ErrorConsentDeclined, "", ""},
		{"a product not run", domain.FailParams{Product: domain.ProductCashFlow}, "", "", "last_error.product"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := reach(t, domain.StatusProcessing)
			err := s.Fail(at(5), tt.in)
			if tt.errPar != "" {
				if e := domainerr.As(err); e == nil || e.Param != tt.errPar || s.Status() != domain.StatusProcessing {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			le := s.LastError()
			if s.Status() != domain.StatusFailed || le == nil || le.Code != tt.code || le.Product != tt.prod || le.Reason == "" {
				t.Fatalf("status %s, last_error %+v", s.Status(), le)
			}
			a := s.Attempts()
			if len(a) != 1 || a[0].Outcome != domain.StatusFailed || a[0].Error == nil || *a[0].Error != *le {
				t.Fatalf("attempts %+v", a)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	s := newSession(t)
	expires := s.ExpiresAt()
	if s.ExpiryDue(expires.Add(-time.Second)) || !s.ExpiryDue(expires) {
		t.Fatal("ExpiryDue before / at expires_at")
	}
	if err := s.Expire(expires); err != nil {
		t.Fatal(err)
	}
	le := s.LastError()
	if s.Status() != domain.StatusExpired || le == nil || le.Code != domain.ErrorAbandoned || len(s.Attempts()) != 0 {
		t.Fatalf("expired from created: %+v", s.State())
	}
	if s.ExpiryDue(expires.Add(time.Hour)) {
		t.Fatal("an expired session is due to expire again")
	}

	// From pending: the applicant's attempt ends as expired, with the reason.
	s = reach(t, domain.StatusPending)
	if err := s.Expire(at(60)); err != nil {
		t.Fatal(err)
	}
	a := s.Attempts()
	if len(a) != 1 || a[0].Outcome != domain.StatusExpired || a[0].Error == nil || a[0].Error.Code != domain.ErrorAbandoned {
		t.Fatalf("attempts %+v", a)
	}
	for _, st := range []domain.Status{domain.StatusProcessing, domain.StatusCompleted, domain.StatusFailed, domain.StatusCanceled} {
		if reach(t, st).ExpiryDue(at(100_000)) {
			t.Errorf("a %s session is due to expire", st)
		}
	}
}

// TestCancelInEachState: every status but completed becomes canceled with its reason, keeping
// last_error and attempts; canceled stays as it is; completed is refused.
func TestCancelInEachState(t *testing.T) {
	for _, from := range domain.AllStatuses {
		t.Run(string(from), func(t *testing.T) {
			s := reach(t, from)
			before := s.State()
			changed, err := s.Cancel(at(50), domain.CancelDuplicate)
			switch from {
			case domain.StatusCompleted:
				wantInvalidState(t, err)
				if s.Status() != domain.StatusCompleted || len(s.Raised()) != 0 {
					t.Fatal("a refused cancel changed the session")
				}
				return
			case domain.StatusCanceled:
				if err != nil || changed || s.CancellationReason() != domain.CancelOther || len(s.Raised()) != 0 {
					t.Fatalf("cancel of a canceled session: changed %v, err %v, reason %s", changed, err, s.CancellationReason())
				}
				return
			}
			if err != nil || !changed || s.Status() != domain.StatusCanceled || s.CancellationReason() != domain.CancelDuplicate ||
				!slices.Equal(raised(s), []string{eventtype.VerificationSessionCanceled}) {
				t.Fatalf("changed %v err %v status %s reason %s raised %v", changed, err, s.Status(), s.CancellationReason(), raised(s))
			}
			if (before.LastError == nil) != (s.LastError() == nil) || (before.LastError != nil && *before.LastError != *s.LastError()) {
				t.Fatalf("cancel changed last_error %+v → %+v", before.LastError, s.LastError())
			}
			got := s.Attempts()
			if len(got) != len(before.Attempts) {
				t.Fatalf("attempts %+v → %+v", before.Attempts, got)
			}
			if from == domain.StatusPending || from == domain.StatusProcessing {
				if got[0].Outcome != domain.StatusCanceled || got[0].EndedAt != at(50) {
					t.Fatalf("the running attempt did not end as canceled: %+v", got)
				}
			} else if !reflect.DeepEqual(got, before.Attempts) {
				t.Fatalf("cancel changed ended attempts: %+v → %+v", before.Attempts, got)
			}
		})
	}
	if _, err := domain.ParseCancellationReason("bored"); domainerr.As(err) == nil || domainerr.As(err).Param != "cancellation_reason" {
		t.Fatalf("unknown reason: %v", err)
	}
	for _, r := range []string{"requested_by_applicant", "duplicate", "fraudulent", "abandoned", "other"} {
		if _, err := domain.ParseCancellationReason(r); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, from := range domain.AllStatuses {
		t.Run(string(from), func(t *testing.T) {
			s := reach(t, from)
			changed, err := s.Redact(at(70))
			if from.Running() {
				wantInvalidState(t, err)
				if s.Applicant().FirstName != "Jane" || len(s.Raised()) != 0 {
					t.Fatal("a refused redaction changed the session")
				}
				return
			}
			if err != nil || !changed || !slices.Equal(raised(s), []string{eventtype.VerificationSessionRedacted}) {
				t.Fatalf("changed %v err %v raised %v", changed, err, raised(s))
			}
			a := s.Applicant()
			for _, f := range []string{a.FirstName, a.LastName, a.Email, a.DateOfBirth, a.Phone, a.Address.Line1, a.Address.Line2,
				a.Address.City, a.Address.State, a.Address.PostalCode, a.Address.Country} {
				if f != domain.Redacted {
					t.Fatalf("applicant not redacted: %+v %+v", a, a.Address)
				}
			}
			if len(s.Metadata()) != 0 || s.RedactedAt() != at(70).Truncate(time.Second) || s.Status() != from {
				t.Fatalf("metadata %v redacted_at %s status %s", s.Metadata(), s.RedactedAt(), s.Status())
			}
			s = stored(s)
			if changed, err := s.Redact(at(80)); err != nil || changed || s.RedactedAt() != at(70).Truncate(time.Second) || len(s.Raised()) != 0 {
				t.Fatalf("second redaction: changed %v err %v", changed, err)
			}
		})
	}
	// The report's reasons go too; results stay.
	s := reach(t, domain.StatusProcessing)
	if err := s.Complete(at(5), map[domain.Product]domain.ResultStatus{domain.ProductIncome: domain.ResultFailed}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redact(at(6)); err != nil {
		t.Fatal(err)
	}
	r := s.Report()
	if r.Products[1].Status != domain.ResultFailed || !slices.Equal(r.Products[1].Reasons, []string{domain.Redacted}) {
		t.Fatalf("report after redaction: %+v", r.Products)
	}
	// Optional fields that were never given stay empty rather than claim a value.
	p := valid()
	p.Applicant.Phone, p.Applicant.Address = nil, nil
	s, _ = domain.New(p)
	s = stored(s)
	_ = s.Expire(at(1))
	s = stored(s)
	_, _ = s.Redact(at(2))
	if a := s.Applicant(); a.Phone != "" || a.Address != nil {
		t.Fatalf("redaction invented fields: %+v", a)
	}
}

// TestRaisedEvents: the completion raises the report's event as a part of the session (its
// object is the report, rendered from the session) before the session's own; no transition
// raises an update (verification events carry no previous_attributes); a session read back
// has raised nothing.
func TestRaisedEvents(t *testing.T) {
	s := reach(t, domain.StatusProcessing)
	if len(s.Raised()) != 0 {
		t.Fatalf("a session read back raised %v", s.Raised())
	}
	if err := s.Complete(at(5), nil); err != nil {
		t.Fatal(err)
	}
	want := []events.Raised{{Type: eventtype.VerificationReportCreated}, {Type: eventtype.VerificationSessionCompleted}}
	if got := s.Raised(); !slices.Equal(got, want) {
		t.Fatalf("raised %+v; want %+v", got, want)
	}
	for _, from := range domain.AllStatuses {
		s := reach(t, from)
		_, _ = s.Cancel(at(40), domain.CancelOther)
		_, _ = s.Redact(at(41))
		for _, r := range s.Raised() {
			if r.Update || r.Part != nil {
				t.Fatalf("%s: %+v", from, r)
			}
		}
	}
}

// A session with a webhook_url routes its events there, signed with its webhook secret; one
// without leaves them to the account's endpoints.
func TestEventDestination(t *testing.T) {
	s := newSession(t)
	if d := s.EventDestination(); d == nil || d.URL != s.WebhookURL() || d.Secret != s.WebhookSecret() || d.URL == "" || d.Secret == "" {
		t.Fatalf("destination %+v", d)
	}
	p := valid()
	p.WebhookURL = nil
	s, err := domain.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.EventDestination(); d != nil {
		t.Fatalf("destination %+v without a webhook_url", d)
	}
}

func TestParseAdvance(t *testing.T) {
	code, prod := ptr("credit_check_failed"), ptr("credit")
	for _, tt := range []struct {
		name     string
		status   *string
		outcomes map[string]string
		failure  *domain.FailureParams
		code     string
		param    string
	}{
		{"status missing", nil, nil, nil, "parameter_missing", "status"},
		{"status unknown", ptr("done"), nil, nil, "parameter_invalid", "status"},
		{"created is not a move", ptr("created"), nil, nil, "parameter_invalid", "status"},
		{"canceled is cancel's", ptr("canceled"), nil, nil, "parameter_invalid", "status"},
		{"outcomes off completed", ptr("failed"), map[string]string{"credit": "failed"}, nil, "parameter_invalid", "outcomes"},
		{"outcome product unknown", ptr("completed"), map[string]string{"scoring": "failed"}, nil, "parameter_invalid", "outcomes[scoring]"},
		{"outcome value", ptr("completed"), map[string]string{"credit": "maybe"}, nil, "parameter_invalid", "outcomes[credit]"},
		{"last_error off failed", ptr("completed"), nil, &domain.FailureParams{Code: code}, "parameter_invalid", "last_error"},
		{"last_error code unknown", ptr("failed"), nil, &domain.FailureParams{Code: ptr("bad_luck")}, "parameter_invalid", "last_error.code"},
		{"abandoned is expiry's", ptr("failed"), nil, &domain.FailureParams{Code: ptr("abandoned")}, "parameter_invalid", "last_error.code"},
		{"last_error product unknown", ptr("failed"), nil, &domain.FailureParams{Product: ptr("scoring")}, "parameter_invalid", "last_error.product"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := domain.ParseAdvance(tt.status, tt.outcomes, tt.failure)
			if e := domainerr.As(err); e == nil || e.Code != tt.code || e.Param != tt.param {
				t.Fatalf("ParseAdvance = %v; want %s naming %s", err, tt.code, tt.param)
			}
		})
	}
	a, err := domain.ParseAdvance(ptr("failed"), nil, &domain.FailureParams{Code: code, Product: prod})
	if err != nil || a.To != domain.StatusFailed || a.Failure == nil || a.Failure.Code != domain.ErrorCreditCheckFailed || a.Failure.Product != domain.ProductCredit {
		t.Fatalf("ParseAdvance = %+v, %v", a, err)
	}
	a, err = domain.ParseAdvance(ptr("completed"), map[string]string{"credit": "failed", "income": "passed"}, nil)
	if err != nil || len(a.Outcomes) != 2 || a.Outcomes[domain.ProductCredit] != domain.ResultFailed {
		t.Fatalf("ParseAdvance = %+v, %v", a, err)
	}
}

func TestParseStatus(t *testing.T) {
	for _, s := range domain.AllStatuses {
		if got, err := domain.ParseStatus("status", string(s)); err != nil || got != s {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := domain.ParseStatus("status", "Created"); domainerr.As(err) == nil || domainerr.As(err).Param != "status" {
		t.Fatalf("ParseStatus(Created) = %v", err)
	}
}

// Rehydrate(State()) is the identity: the stored form loses nothing.
func TestStateRoundTrip(t *testing.T) {
	s := reach(t, domain.StatusProcessing)
	if err := s.Complete(at(5), nil); err != nil {
		t.Fatal(err)
	}
	s = stored(s)
	if _, err := s.Redact(at(6)); err != nil {
		t.Fatal(err)
	}
	got := domain.Rehydrate(s.State()).State()
	want := s.State()
	if got.Report.ID != want.Report.ID || got.RedactedAt != want.RedactedAt || len(got.Attempts) != 1 ||
		got.Applicant.Address.City != want.Applicant.Address.City || got.ExpiresAt != want.ExpiresAt {
		t.Fatalf("round trip:\n%+v\n%+v", got, want)
	}
}
