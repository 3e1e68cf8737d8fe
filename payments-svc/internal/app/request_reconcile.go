package app

import (
	"context"
	"errors"
	"fmt"

	"rentalplatform/payments-svc/internal/domain"
)

// reconcileBatch bounds the requests one pass of the reconciler reads at a time.
const reconcileBatch = 1000

// Reconcile restores what the queue lost, from the store, which is the truth: every open
// request whose attempt is overdue by more than Config.ReconcileGrace (its task was lost) or
// whose claim went stale (its worker died) gets its task queued again; when the queue lost its
// data (a flush, a restart without persistence) every open request's attempt is queued again
// for its time; and the cascades of cancelled agreements left unfinished are finished. Queueing
// an attempt that is queued already changes nothing (an attempt late only because the queue
// is backed up keeps its task), and a task of an attempt that is no longer due does nothing,
// so a pass never doubles a charge. It returns how many attempts it queued that the queue did
// not hold.
func (s *Service) Reconcile(ctx context.Context) (int, error) {
	now := s.Now()
	queued := 0
	lost, err := s.Scheduler.Lost(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile: %w", err)
	}
	// A full pass that failed is run again by the next pass.
	if lost || s.fullPass.Load() {
		s.fullPass.Store(true)
		n, err := s.rescheduleAll(ctx)
		queued += n
		if err != nil {
			return queued, err
		}
		s.fullPass.Store(false)
	}
	// One batch a pass: the tasks just queued run soon, and the next pass takes the rest.
	overdue, err := s.Requests.Overdue(ctx, now.Add(-s.cfg.ReconcileGrace), now.Add(-s.cfg.ClaimTTL), reconcileBatch)
	if err != nil {
		return queued, fmt.Errorf("reconcile: %w", err)
	}
	for _, r := range overdue {
		n, _ := r.Scheduled()
		ok, err := s.Scheduler.Schedule(ctx, r.ID(), n, now)
		if err != nil {
			return queued, fmt.Errorf("reconcile: %w", err)
		}
		if ok {
			queued++
		}
	}
	var errs []error
	cascading, err := s.Agreements.Cascading(ctx, reconcileBatch)
	if err != nil {
		return queued, fmt.Errorf("reconcile: %w", err)
	}
	for _, a := range cascading {
		if err := s.cascade(ctx, a.ID()); err != nil && !errors.Is(err, domain.ErrAgreementNotFound) {
			errs = append(errs, err)
		}
	}
	return queued, errors.Join(errs...)
}

// rescheduleAll queues the attempt of every open request for its time (a claimed one for when
// its claim goes stale).
func (s *Service) rescheduleAll(ctx context.Context) (int, error) {
	queued, after := 0, ""
	for {
		page, err := s.Requests.Open(ctx, after, reconcileBatch)
		if err != nil {
			return queued, fmt.Errorf("reschedule: %w", err)
		}
		for _, r := range page {
			n, due := r.Scheduled()
			if r.Claimed() {
				due = r.ClaimedAt().Add(s.cfg.ClaimTTL)
			}
			ok, err := s.Scheduler.Schedule(ctx, r.ID(), n, due)
			if err != nil {
				return queued, fmt.Errorf("reschedule: %w", err)
			}
			if ok {
				queued++
			}
			after = r.ID()
		}
		if len(page) < reconcileBatch {
			return queued, nil
		}
	}
}
