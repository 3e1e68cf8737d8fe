package app

import (
	"context"
	"errors"
	"fmt"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
)

// ErrUnauthenticated is the one answer for a secret that is malformed, unknown, revoked or
// expired: callers must not be able to tell these apart.
var ErrUnauthenticated = errors.New("invalid API key")

// Authenticate returns the active key whose secret this is. Any other error than
// ErrUnauthenticated means the key store could not be asked.
//
// Unknown and revoked secrets take the same path: the same cache lookup, or the same one
// lookup by hash in the store, then one check in code.
func (s *Service) Authenticate(ctx context.Context, secret string) (domain.Key, error) {
	typ, livemode, ok := domain.ParseSecret(secret)
	if !ok {
		return domain.Key{}, ErrUnauthenticated
	}
	h := domain.HashSecret(secret)
	k, found, err := s.lookup(ctx, h)
	if err != nil {
		return domain.Key{}, fmt.Errorf("authenticate: %w", err)
	}
	// The type and mode are part of the hashed secret, so these checks cannot fail for a
	// stored key; they stay as a guard against a store that returned the wrong document.
	now := s.now()
	if !found || !k.Active(now) || k.Livemode() != livemode || k.Type() != typ || k.Hash() != h {
		return domain.Key{}, ErrUnauthenticated
	}
	s.usage.seen(k.ID(), now)
	return k, nil
}

type lookupResult struct {
	key   domain.Key
	found bool
}

// lookup reads the key for h through the cache. Concurrent misses for one hash share one
// store read, so an expiring hot key costs one query, not one per waiting request.
func (s *Service) lookup(ctx context.Context, h domain.Hash) (domain.Key, bool, error) {
	now := s.now()
	if k, found, hit := s.cache.get(h, now); hit {
		return k, found, nil
	}
	v, err, _ := s.lookups.Do(string(h[:]), func() (any, error) {
		gen := s.cache.generation()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		k, err := s.keys.ByHash(ctx, h)
		switch {
		case err == nil:
			s.cache.put(h, k, true, gen, s.now())
			return lookupResult{key: k, found: true}, nil
		case domainerr.KindOf(err) == domainerr.NotFound:
			s.cache.put(h, domain.Key{}, false, gen, s.now())
			return lookupResult{}, nil
		default:
			return nil, err
		}
	})
	if err != nil {
		return domain.Key{}, false, err
	}
	r := v.(lookupResult)
	return r.key, r.found, nil
}
