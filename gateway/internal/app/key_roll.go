package app

import (
	"context"
	"fmt"
	"time"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/ids"
)

// RollKey issues a successor of the key with this id (a new id and secret, the same account,
// mode, type, permissions and rate limit) and lets the old key work for expiresIn more (0: it
// stops at once). It returns the new key with its secret.
//
// The old key's expiry is checked on every authentication, cached or not, so it stops on time
// on every replica; only expiresIn 0 depends on the cache, like a revoke: at once on this
// replica, within the cache TTL on the others.
func (s *Service) RollKey(ctx context.Context, id string, expiresIn time.Duration) (domain.Key, string, error) {
	if !ids.Valid(ids.APIKey, id) {
		return domain.Key{}, "", domain.KeyNotFound(id)
	}
	old, err := s.keys.ByID(ctx, id)
	if err != nil {
		return domain.Key{}, "", fmt.Errorf("roll key: %w", err)
	}
	secret := domain.NewSecret(old.Type(), old.Livemode())
	next, expiring, err := old.Roll(s.ids.New(ids.APIKey), secret, s.now(), expiresIn)
	if err != nil {
		return domain.Key{}, "", err
	}
	if err := s.keys.Roll(ctx, expiring, next); err != nil {
		return domain.Key{}, "", fmt.Errorf("roll key: %w", err)
	}
	s.cache.invalidate(old.Hash())
	return next, secret, nil
}
