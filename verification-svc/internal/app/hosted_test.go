package app_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/libs/identity"
	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/domain"
)

// The hosted page's use cases: the client secret is the only credential, of its own session,
// while it runs and before expires_at; a submission finishes the session once.
func TestHostedPage(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	s, err := e.svc.Create(t.Context(), e.next(), input(""))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := e.svc.Create(t.Context(), e.next(), input(""))
	ctx := t.Context()
	if got, err := e.svc.OpenHostedPage(ctx, s.ID(), s.ClientSecret()); err != nil || got.ID() != s.ID() {
		t.Fatalf("open with its secret: %v", err)
	}
	for _, c := range []struct{ name, id, secret string }{
		{"wrong secret", s.ID(), s.ID() + "_secret_x"},
		{"another session's secret", s.ID(), other.ClientSecret()},
		{"no secret", s.ID(), ""},
		{"not an id", "vs_nope", s.ClientSecret()},
	} {
		if _, err := e.svc.OpenHostedPage(ctx, c.id, c.secret); !errors.Is(err, app.ErrHostedPageClosed) {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	// Two submissions at once: one finishes the session, the other finds it finished.
	page := identity.Identity{Account: identity.HostedAccount, RequestID: "req_page"}
	done := domain.Advance{To: domain.StatusCompleted}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = e.svc.FinishHostedPage(ctx, page, s.ID(), s.ClientSecret(), done) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), app.ErrHostedPageClosed) {
		t.Fatalf("two submissions: %v", errs)
	}
	evs := e.waitPublished(t, s.ID(), 5)
	time.Sleep(50 * time.Millisecond)
	var types []string
	for _, ev := range e.published(s.ID()) {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, " "); got != "verification_session.created verification_session.pending verification_session.processing verification_report.created verification_session.completed" {
		t.Fatalf("events %s", got)
	}
	if r := evs[4].Request; r.ID == nil || *r.ID != "req_page" || r.IdempotencyKey != nil || evs[4].Account != e.caller.Account {
		t.Fatalf("the completed event: request %+v, account %s", r, evs[4].Account)
	}
	if _, err := e.svc.OpenHostedPage(ctx, s.ID(), s.ClientSecret()); !errors.Is(err, app.ErrHostedPageClosed) {
		t.Fatalf("open after completion: %v", err)
	}

	// Past expires_at, before any expiry ran: closed.
	e.clock.add(time.Hour)
	if _, err := e.svc.FinishHostedPage(ctx, page, other.ID(), other.ClientSecret(), done); !errors.Is(err, app.ErrHostedPageClosed) {
		t.Fatalf("finish at expires_at: %v", err)
	}

	// Live mode: the page opens, a submission changes nothing.
	live := e.caller
	live.Livemode = true
	l, _ := e.svc.Create(ctx, live, input(""))
	if _, err := e.svc.OpenHostedPage(ctx, l.ID(), l.ClientSecret()); err != nil {
		t.Fatalf("open a live session's page: %v", err)
	}
	if _, err := e.svc.FinishHostedPage(ctx, page, l.ID(), l.ClientSecret(), done); !errors.Is(err, app.ErrHostedLive) {
		t.Fatalf("finish a live session: %v", err)
	}
	if got, _ := e.svc.Get(ctx, live, l.ID()); got.Status() != domain.StatusCreated {
		t.Fatalf("the live session is %s", got.Status())
	}
}
