package app

import (
	"context"
	"slices"
	"strings"

	"rentalplatform/libs/listing"

	"rentalplatform/collections-svc/internal/domain"
)

// ListPayments returns one page of the debt payments of the caller's case, newest first, and
// the case. Payments live in their case's document (a payment and the remainder it lowers are
// one write), at most domain.MaxPayments of them, so the page is cut from the case in memory.
func (s *Service) ListPayments(ctx context.Context, caller Caller, caseID string, p listing.Params) ([]domain.Payment, bool, *domain.Case, error) {
	c, err := s.GetCase(ctx, caller, caseID)
	if err != nil {
		return nil, false, nil, err
	}
	page, hasMore := pagePayments(c.Payments(), p)
	return page, hasMore, c, nil
}

// pagePayments applies the list parameters to payments as docstore's Page applies them to a
// collection: newest first by id, created bounds, and one page before or after a cursor.
func pagePayments(ps []domain.Payment, p listing.Params) ([]domain.Payment, bool) {
	ps = slices.DeleteFunc(ps, func(x domain.Payment) bool {
		c := x.Created.Unix()
		return (p.CreatedGTE != nil && c < *p.CreatedGTE) || (p.CreatedLTE != nil && c > *p.CreatedLTE)
	})
	slices.SortFunc(ps, func(a, b domain.Payment) int { return strings.Compare(b.ID, a.ID) })
	if p.EndingBefore != "" {
		end := 0
		for end < len(ps) && ps[end].ID > p.EndingBefore {
			end++
		}
		start := max(0, end-p.Limit)
		return ps[start:end], start > 0
	}
	start := 0
	if p.StartingAfter != "" {
		for start < len(ps) && ps[start].ID >= p.StartingAfter {
			start++
		}
	}
	end := min(len(ps), start+p.Limit)
	return ps[start:end], end < len(ps)
}
