package app

import (
	"context"
	"fmt"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/ids"
)

// CreateKey is the input of Service.CreateKey.
type CreateKey struct {
	Account  string
	Livemode bool
	// Secret, when set, is used instead of a generated one (seeding a known development key);
	// it must have the shape and prefix of a generated secret.
	Secret string
}

// CreateKey makes a key and returns it with its secret, which is not stored and cannot be
// read again.
func (s *Service) CreateKey(ctx context.Context, in CreateKey) (domain.Key, string, error) {
	secret := in.Secret
	if secret == "" {
		secret = domain.NewSecret(in.Livemode)
	}
	k, err := domain.NewKey(s.ids.New(ids.APIKey), in.Account, in.Livemode, secret, s.now())
	if err != nil {
		return domain.Key{}, "", err
	}
	if err := s.keys.Create(ctx, k); err != nil {
		return domain.Key{}, "", fmt.Errorf("create key: %w", err)
	}
	// Someone may have tried this exact (imported) secret before it existed; drop the
	// negative entry so the key works at once on this replica.
	s.cache.invalidate(k.Hash())
	return k, secret, nil
}
