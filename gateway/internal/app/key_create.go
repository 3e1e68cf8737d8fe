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
	// Permissions, when set, make a restricted key (rk_…) with these permissions; otherwise
	// the key is a secret key (sk_…).
	Permissions *domain.Permissions
	// RateLimit, when set, replaces the default rate limit of the key's mode.
	RateLimit *domain.RateLimit
	// Secret, when set, is used instead of a generated one (seeding a known development key);
	// it must have the shape and prefix of a generated secret.
	Secret string
}

// CreateKey makes a key and returns it with its secret, which is not stored and cannot be
// read again.
func (s *Service) CreateKey(ctx context.Context, in CreateKey) (domain.Key, string, error) {
	spec := domain.KeySpec{Account: in.Account, Livemode: in.Livemode, Type: domain.KeySecret,
		Permissions: in.Permissions, RateLimit: in.RateLimit}
	if in.Permissions != nil {
		spec.Type = domain.KeyRestricted
	}
	secret := in.Secret
	if secret == "" {
		secret = domain.NewSecret(spec.Type, in.Livemode)
	}
	k, err := domain.NewKey(s.ids.New(ids.APIKey), spec, secret, s.now())
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
