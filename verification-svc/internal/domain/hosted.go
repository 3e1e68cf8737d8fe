package domain

import (
	"crypto/subtle"
	"time"
)

// HostedPageOpens reports whether secret opens the session's hosted page (/verify/<id>) at now:
// it is this session's client secret, compared in constant time, and the session still has
// something for the applicant to do: it runs (created, pending or processing) and its
// expires_at has not come. A session that completed, failed, expired or was canceled (or,
// having ended, redacted) opens no page, whatever secret is given; so does one past its
// expires_at whose expiry has not run yet. The secret opens only its own session's page: the
// one credential of a request that names no account.
func (s *Session) HostedPageOpens(secret string, now time.Time) bool {
	// Evaluated first and always, so the time taken does not say whether the session runs.
	match := subtle.ConstantTimeCompare([]byte(secret), []byte(s.clientSecret)) == 1
	return match && s.clientSecret != "" && s.status.Running() && now.Before(s.expiresAt)
}

// Finish runs the session from where it stands to the outcome a names, completed (with its
// products' outcomes) or failed (with its last_error): created → pending → processing → a.To,
// each edge the one the test helper takes (Apply), raising the same events in the same order.
// It is the applicant submitting the hosted page of a test-mode session, applied in one write.
// Any other target is refused, as is a session that cannot reach a.To from where it stands.
func (s *Session) Finish(now time.Time, a Advance) error {
	if a.To != StatusCompleted && a.To != StatusFailed {
		return invalid("status", "Invalid status: a session is finished as completed or failed, not %s.", a.To)
	}
	if s.status == StatusCreated {
		if err := s.Start(now); err != nil {
			return err
		}
	}
	if s.status == StatusPending {
		if err := s.Process(); err != nil {
			return err
		}
	}
	return s.Apply(now, a)
}
