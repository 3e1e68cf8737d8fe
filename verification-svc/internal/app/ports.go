package app

import (
	"context"
	"time"

	"rentalplatform/verification-svc/internal/domain"
)

// Scheduler queues a session's expiry to run at at. Scheduling an expiry that is already
// queued is not an error and does not queue it twice.
type Scheduler interface {
	ScheduleExpiry(ctx context.Context, session string, at time.Time) error
}

// Provider is a verification provider: the service that runs the applicant's checks for a
// live-mode session. Begin hands it a new live session; the provider reports the applicant's
// progress back as the lifecycle's moves (domain.Advance, applied as the test helper applies
// them in test mode). No provider exists yet, so none is configured (docs/api.md).
type Provider interface {
	Begin(ctx context.Context, s *domain.Session) error
}
