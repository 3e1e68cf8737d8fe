package app

import (
	"context"
	"errors"

	"rentalplatform/libs/events"
	"rentalplatform/verification-svc/internal/domain"
)

// ErrHostedPageClosed is the one answer to a hosted page the client secret does not open: no
// such session, a wrong secret, another session's secret, a session that ended or whose
// expires_at has come. One error for all, so the page cannot tell them apart.
var ErrHostedPageClosed = errors.New("the hosted page is not open to this client secret")

// ErrHostedLive is the answer to a submitted hosted page of a live-mode session: no
// verification provider runs its checks (Provider), so the page has nothing to submit to.
var ErrHostedLive = errors.New("live-mode sessions cannot be finished from the hosted page")

// OpenHostedPage returns the session whose hosted page secret opens
// (domain.Session.HostedPageOpens), or ErrHostedPageClosed. The request names no account: the
// session's client secret is its only credential. Opening the page changes nothing (a link
// checker or a prefetch opens it too).
func (s *Service) OpenHostedPage(ctx context.Context, id, secret string) (*domain.Session, error) {
	if !validID(id) || secret == "" {
		return nil, ErrHostedPageClosed
	}
	v, err := s.Sessions.Load(ctx, id)
	if errors.Is(err, domain.ErrSessionNotFound) {
		return nil, ErrHostedPageClosed
	}
	if err != nil {
		return nil, err
	}
	if !v.HostedPageOpens(secret, s.Now()) {
		return nil, ErrHostedPageClosed
	}
	return v, nil
}

// FinishHostedPage is the applicant submitting the hosted page of a test-mode session: the
// session moves from where it stands to the outcome a (completed with its products' outcomes,
// or failed), along the edges the test helper takes (domain.Session.Finish), in one write that
// stores the events of every edge, naming caller's request. The secret is checked on the
// session as it is written, so a session that ended or expired meanwhile is
// ErrHostedPageClosed; a live-mode one is ErrHostedLive and does not change.
func (s *Service) FinishHostedPage(ctx context.Context, caller Caller, id, secret string, a domain.Advance) (*domain.Session, error) {
	if !validID(id) || secret == "" {
		return nil, ErrHostedPageClosed
	}
	now := s.Now()
	v, err := s.Sessions.UpdateAny(events.CausedBy(ctx, caller), id, func(v *domain.Session) error {
		if !v.HostedPageOpens(secret, now) {
			return ErrHostedPageClosed
		}
		if v.Livemode() {
			return ErrHostedLive
		}
		return v.Finish(now, a)
	})
	if errors.Is(err, domain.ErrSessionNotFound) {
		return nil, ErrHostedPageClosed
	}
	return v, err
}
