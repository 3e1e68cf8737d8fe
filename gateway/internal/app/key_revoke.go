package app

import (
	"context"
	"fmt"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/ids"
)

// RevokeKey revokes a key and returns it. It takes effect on this replica at once and on the
// others within the cache TTL. Revoking a revoked key returns it unchanged.
func (s *Service) RevokeKey(ctx context.Context, id string) (domain.Key, error) {
	if !ids.Valid(ids.APIKey, id) {
		return domain.Key{}, domain.KeyNotFound(id)
	}
	k, err := s.keys.Revoke(ctx, id, s.now())
	if err != nil {
		return domain.Key{}, fmt.Errorf("revoke key: %w", err)
	}
	s.cache.invalidate(k.Hash())
	return k, nil
}
