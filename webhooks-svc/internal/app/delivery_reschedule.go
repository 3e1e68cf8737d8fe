package app

import (
	"context"
	"time"
)

// overdueBatch bounds one RescheduleOverdue pass.
const overdueBatch = 500

// RescheduleOverdue queues again the attempts of pending deliveries that were due more than
// grace ago, in case their task was lost (Redis lost data, or was flushed). Attempts still
// queued are not queued twice (the task id is the delivery and attempt), so this is safe to
// run at any time. It returns how many deliveries it looked at.
func (s *Service) RescheduleOverdue(ctx context.Context, grace time.Duration) (int, error) {
	overdue, err := s.Deliveries.Overdue(ctx, s.Now().Add(-grace), overdueBatch)
	if err != nil {
		return 0, err
	}
	for _, d := range overdue {
		if err := s.ensureScheduled(ctx, d); err != nil {
			return 0, err
		}
	}
	return len(overdue), nil
}
