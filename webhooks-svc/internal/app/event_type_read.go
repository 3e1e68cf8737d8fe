package app

import (
	"slices"
	"strings"

	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/listing"
)

// EventTypeFilter narrows the event catalogue; zero fields do not filter, set ones all apply.
type EventTypeFilter struct {
	Family  string // the types of this family ("charge" for charge.*)
	Emitted *bool  // the types the platform emits (true), or those it only reserves (false)
}

// ListEventTypes returns one page of the event catalogue (libs/eventtype), which is the same
// for every account and mode, narrowed by f, and whether more types lie beyond the page in the
// direction read. Types have no creation time, so the catalogue is ordered by type ascending
// instead of newest first, and a cursor is a type name: starting_after pages on to the types
// after it, ending_before back to those before it. A cursor is only a position (the port checks
// it is a type of the catalogue): it need not pass f.
func (s *Service) ListEventTypes(f EventTypeFilter, p listing.Params) ([]eventtype.Entry, bool) {
	var sel []eventtype.Entry
	for _, e := range eventtype.Catalogue() {
		if (f.Family == "" || eventtype.Family(e.Type) == f.Family) && (f.Emitted == nil || e.Emitted == *f.Emitted) {
			sel = append(sel, e)
		}
	}
	// at is where a type stands in sel, whether or not sel holds it; found says it does.
	at := func(t string) (int, bool) {
		return slices.BinarySearchFunc(sel, t, func(e eventtype.Entry, t string) int { return strings.Compare(e.Type, t) })
	}
	if p.EndingBefore != "" {
		end, _ := at(p.EndingBefore)
		start := max(end-p.Limit, 0)
		return sel[start:end], start > 0
	}
	start := 0
	if p.StartingAfter != "" {
		i, found := at(p.StartingAfter)
		if found {
			i++
		}
		start = i
	}
	end := min(start+p.Limit, len(sel))
	return sel[start:end], end < len(sel)
}
