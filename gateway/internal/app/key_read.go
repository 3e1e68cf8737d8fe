package app

import (
	"context"
	"fmt"

	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
)

// ListKeys returns one page of keys, newest first: the account's when account is set, else
// every account's. A cursor must name a key in the listed set.
func (s *Service) ListKeys(ctx context.Context, account string, p listing.Params) ([]domain.Key, bool, error) {
	if account != "" {
		if err := domain.ValidateAccount(account); err != nil {
			return nil, false, err
		}
	}
	for _, c := range []struct{ param, id string }{{"starting_after", p.StartingAfter}, {"ending_before", p.EndingBefore}} {
		if c.id == "" {
			continue
		}
		k, err := s.keys.ByID(ctx, c.id)
		if domainerr.KindOf(err) == domainerr.NotFound || err == nil && account != "" && k.Account() != account {
			return nil, false, domain.KeyReferenceMissing(c.param, c.id)
		}
		if err != nil {
			return nil, false, fmt.Errorf("list keys: cursor: %w", err)
		}
	}
	keys, more, err := s.keys.List(ctx, account, p)
	if err != nil {
		return nil, false, fmt.Errorf("list keys: %w", err)
	}
	return keys, more, nil
}

// GetKey returns the key with this id.
func (s *Service) GetKey(ctx context.Context, id string) (domain.Key, error) {
	if !ids.Valid(ids.APIKey, id) {
		return domain.Key{}, domain.KeyNotFound(id)
	}
	k, err := s.keys.ByID(ctx, id)
	if err != nil {
		return domain.Key{}, fmt.Errorf("get key: %w", err)
	}
	return k, nil
}
