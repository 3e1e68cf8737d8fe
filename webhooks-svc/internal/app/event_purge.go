package app

import (
	"context"
	"time"
)

// PurgeExpired removes the events older than the retention period, and their deliveries. It
// runs periodically everywhere; where the store has TTL indexes they remove the same documents
// too, and this finds little left to do.
func (s *Service) PurgeExpired(ctx context.Context) (events, deliveries int64, err error) {
	// Whole seconds: events keep their creation time in seconds.
	cutoff := s.Now().Add(-s.cfg.Retention).Truncate(time.Second)
	if deliveries, err = s.Deliveries.Purge(ctx, cutoff); err != nil {
		return 0, 0, err
	}
	events, err = s.Events.Purge(ctx, cutoff)
	return events, deliveries, err
}
