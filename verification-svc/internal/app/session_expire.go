package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rentalplatform/verification-svc/internal/domain"
)

// ErrNotDue is returned by Expire for a session whose expires_at has not come (a task run
// early, by another clock): the task runs again later, and the sweep is there besides.
var ErrNotDue = errors.New("the session's expires_at has not come")

// Expire runs a session's expiry task: a session still created or pending at its expires_at
// becomes expired (a background transition: its event names no request). A session that moved
// on, or no longer exists, is left as it is; running the task twice is harmless.
func (s *Service) Expire(ctx context.Context, id string) error {
	_, err := s.expire(ctx, id)
	return err
}

// expire is Expire, reporting whether this call expired the session.
func (s *Service) expire(ctx context.Context, id string) (bool, error) {
	now := s.Now()
	var early time.Time
	_, err := s.Sessions.UpdateAny(ctx, id, func(v *domain.Session) error {
		if !v.ExpiryDue(now) {
			if v.Status() == domain.StatusCreated || v.Status() == domain.StatusPending {
				early = v.ExpiresAt()
			}
			return errUnchanged
		}
		// Background work: ctx names no request, so the expired event's request is null.
		return v.Expire(now)
	})
	switch {
	case errors.Is(err, errUnchanged) && !early.IsZero():
		return false, fmt.Errorf("expire %s at %s: %w", id, early.Format(time.RFC3339), ErrNotDue)
	case errors.Is(err, errUnchanged), errors.Is(err, domain.ErrSessionNotFound):
		return false, nil
	}
	return err == nil, err
}

// sweepBatch and sweepBatches bound one ExpireOverdue pass: 20 reads of 500 sessions.
const (
	sweepBatch   = 500
	sweepBatches = 20
)

// ExpireOverdue is the sweep that keeps MongoDB the truth about expiry: it expires every
// session still created or pending whose expires_at passed more than grace ago, in case its
// task was lost (Redis lost data, or the task ran out of retries). grace leaves the task its
// turn first. It returns how many sessions it expired (a task may have done some meanwhile).
func (s *Service) ExpireOverdue(ctx context.Context, grace time.Duration) (int, error) {
	expired := 0
	for range sweepBatches {
		ids, err := s.Sessions.ExpiryDue(ctx, s.Now().Add(-grace), sweepBatch)
		if err != nil {
			return expired, err
		}
		for _, id := range ids {
			done, err := s.expire(ctx, id)
			if err != nil {
				return expired, err
			}
			if done {
				expired++
			}
		}
		if len(ids) < sweepBatch {
			break
		}
	}
	return expired, nil
}
