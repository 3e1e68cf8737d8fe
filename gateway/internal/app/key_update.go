package app

import (
	"context"
	"fmt"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/ids"
)

// SetRateLimit gives the key with this id its own rate limit, or (nil) returns it to the
// default of its mode. It takes effect at once on this replica and within the cache TTL on
// the others.
func (s *Service) SetRateLimit(ctx context.Context, id string, r *domain.RateLimit) (domain.Key, error) {
	if !ids.Valid(ids.APIKey, id) {
		return domain.Key{}, domain.KeyNotFound(id)
	}
	if r != nil {
		if _, err := domain.NewRateLimit(r.PerSecond); err != nil {
			return domain.Key{}, err
		}
	}
	k, err := s.keys.SetRateLimit(ctx, id, r)
	if err != nil {
		return domain.Key{}, fmt.Errorf("set rate limit: %w", err)
	}
	s.cache.invalidate(k.Hash())
	return k, nil
}
