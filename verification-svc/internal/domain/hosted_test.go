package domain_test

import (
	"slices"
	"testing"
	"time"

	"rentalplatform/verification-svc/internal/domain"
)

// The client secret opens its own session's page while the session runs and before its
// expires_at; nothing else opens it.
func TestHostedPageOpens(t *testing.T) {
	secret := valid().ClientSecret
	other := "vs_01kaj2c8v6f3q9ysq7m2d0w1y0_secret_x"
	for _, st := range domain.AllStatuses {
		s := reach(t, st)
		if got, want := s.HostedPageOpens(secret, at(10)), st.Running(); got != want {
			t.Errorf("%s: opens %v, want %v", st, got, want)
		}
	}
	s := newSession(t)
	for _, c := range []struct {
		name   string
		secret string
		at     time.Time
		want   bool
	}{
		{"its secret", secret, at(1), true},
		{"the last second before expires_at", secret, s.ExpiresAt().Add(-time.Nanosecond), true},
		{"at expires_at", secret, s.ExpiresAt(), false},
		{"another session's secret", other, at(1), false},
		{"a prefix of it", secret[:len(secret)-1], at(1), false},
		{"it and more", secret + "x", at(1), false},
		{"nothing", "", at(1), false},
	} {
		if got := s.HostedPageOpens(c.secret, c.at); got != c.want {
			t.Errorf("%s: opens %v, want %v", c.name, got, c.want)
		}
	}
}

// Finish walks the lifecycle's remaining edges to the outcome, raising what the test helper's
// moves raise, from wherever a running session stands.
func TestFinish(t *testing.T) {
	completed := domain.Advance{To: domain.StatusCompleted, Outcomes: map[domain.Product]domain.ResultStatus{domain.ProductCredit: domain.ResultFailed}}
	failed := domain.Advance{To: domain.StatusFailed, Failure: &domain.FailParams{Product: domain.ProductIncome}}
	for _, c := range []struct {
		from domain.Status
		a    domain.Advance
		want []string
	}{
		{domain.StatusCreated, completed, []string{"verification_session.pending", "verification_session.processing", "verification_report.created", "verification_session.completed"}},
		{domain.StatusPending, completed, []string{"verification_session.processing", "verification_report.created", "verification_session.completed"}},
		{domain.StatusProcessing, completed, []string{"verification_report.created", "verification_session.completed"}},
		{domain.StatusCreated, failed, []string{"verification_session.pending", "verification_session.processing", "verification_session.failed"}},
	} {
		s := reach(t, c.from)
		if err := s.Finish(at(5), c.a); err != nil {
			t.Fatalf("from %s to %s: %v", c.from, c.a.To, err)
		}
		if s.Status() != c.a.To || !slices.Equal(raised(s), c.want) {
			t.Fatalf("from %s to %s: %s, raised %v; want %v", c.from, c.a.To, s.Status(), raised(s), c.want)
		}
		if at := s.Attempts(); len(at) != 1 || at[0].Outcome != c.a.To {
			t.Fatalf("from %s: attempts %+v", c.from, at)
		}
	}
	done := reach(t, domain.StatusCreated)
	_ = done.Finish(at(5), completed)
	if r := done.Report(); r == nil || r.Products[2].Status != domain.ResultFailed || r.Products[0].Status != domain.ResultPassed {
		t.Fatalf("report %+v", r)
	}
	f := reach(t, domain.StatusCreated)
	_ = f.Finish(at(5), failed)
	if e := f.LastError(); e == nil || e.Code != domain.ErrorIncomeInsufficient || e.Product != domain.ProductIncome {
		t.Fatalf("last_error %+v", e)
	}

	// Ended sessions cannot be finished; only completed and failed are outcomes.
	for _, st := range []domain.Status{domain.StatusCompleted, domain.StatusFailed, domain.StatusExpired, domain.StatusCanceled} {
		wantInvalidState(t, reach(t, st).Finish(at(5), completed))
	}
	if err := newSession(t).Finish(at(5), domain.Advance{To: domain.StatusExpired}); err == nil {
		t.Fatal("Finish to expired: accepted")
	}
}
