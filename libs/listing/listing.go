// Package listing parses the list parameters every list operation shares and shapes the List
// object. Lists are newest first and keyed by the object id, which is time-ordered (package ids),
// so a cursor is just an id.
package listing

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"rentalplatform/libs/domainerr"
)

// Page size bounds.
const (
	DefaultLimit = 10
	MaxLimit     = 100
)

// Params are the parsed list parameters.
type Params struct {
	Limit         int
	StartingAfter string // return objects older than this id
	EndingBefore  string // return objects newer than this id
	CreatedGTE    *int64 // Unix seconds, inclusive
	CreatedLTE    *int64
}

// Backward reports whether the page is read towards newer objects (ending_before).
func (p Params) Backward() bool { return p.EndingBefore != "" }

// Spec says what a list operation accepts beyond limit and the cursors.
type Spec struct {
	IDPrefix string   // cursors must carry this prefix, e.g. "we_"
	Created  bool     // created[gte] / created[lte] accepted
	Filters  []string // other query parameters the operation reads itself
}

// Parse reads and validates the common list parameters from q. It refuses parameters that are
// neither common nor named in spec.Filters, naming them, so a typo never silently widens a list.
// A parameter whose name does not end in "[]" is a single value: given twice it is 400
// parameter_duplicate, given empty ("limit=") 400 parameter_invalid, both naming it. (Query
// strings read with request.Query are already refused for repeats; Parse holds the rule for
// any url.Values.)
func Parse(q url.Values, spec Spec) (Params, error) {
	p := Params{Limit: DefaultLimit}
	if err := checkKnown(q, spec); err != nil {
		return Params{}, err
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxLimit {
			return Params{}, domainerr.New(domainerr.Invalid, domainerr.CodeParameterInvalid, "limit",
				"Invalid limit: must be an integer from 1 to %d, got '%s'.", MaxLimit, v[0])
		}
		p.Limit = n
	}
	for _, c := range []struct {
		name string
		dst  *string
	}{{"starting_after", &p.StartingAfter}, {"ending_before", &p.EndingBefore}} {
		vs, ok := q[c.name]
		if !ok {
			continue
		}
		v := vs[0]
		if !strings.HasPrefix(v, spec.IDPrefix) || len(v) == len(spec.IDPrefix) || len(v) > 128 {
			return Params{}, domainerr.New(domainerr.Invalid, domainerr.CodeParameterInvalid, c.name,
				"Invalid %s: expected an id starting with '%s', got '%s'.", c.name, spec.IDPrefix, v)
		}
		*c.dst = v
	}
	if p.StartingAfter != "" && p.EndingBefore != "" {
		return Params{}, domainerr.New(domainerr.Invalid, domainerr.CodeParametersExclusive, "ending_before", "starting_after and ending_before cannot be used together.")
	}
	if spec.Created {
		for _, c := range []struct {
			name string
			dst  **int64
		}{{"created[gte]", &p.CreatedGTE}, {"created[lte]", &p.CreatedLTE}} {
			vs, ok := q[c.name]
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(vs[0], 10, 64)
			if err != nil || n < 0 {
				return Params{}, domainerr.New(domainerr.Invalid, domainerr.CodeParameterInvalid, c.name,
					"Invalid %s: expected a Unix timestamp, got '%s'.", c.name, vs[0])
			}
			*c.dst = &n
		}
	}
	return p, nil
}

// IsArray reports whether a query parameter of this name may be given more than once: its name
// ends in "[]" (types[]=a&types[]=b), as form-encoding clients name arrays.
func IsArray(name string) bool { return strings.HasSuffix(name, "[]") }

// checkKnown refuses unknown parameters (all of them named in the message), then, in name
// order, a single-valued parameter given twice or given empty.
func checkKnown(q url.Values, spec Spec) error {
	var unknown []string
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
		switch name {
		case "limit", "starting_after", "ending_before":
			continue
		case "created[gte]", "created[lte]":
			if spec.Created {
				continue
			}
		}
		if !slices.Contains(spec.Filters, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		e := domainerr.Unknown(unknown[0])
		if len(unknown) > 1 {
			e.Message = fmt.Sprintf("Received unknown parameters: %s.", strings.Join(unknown, ", "))
		}
		return e
	}
	sort.Strings(names)
	for _, name := range names {
		if IsArray(name) {
			continue
		}
		switch vs := q[name]; {
		case len(vs) > 1:
			return Duplicate(name)
		case len(vs) == 0 || vs[0] == "":
			return domainerr.New(domainerr.Invalid, domainerr.CodeParameterInvalid, name,
				"Invalid %s: must not be empty; leave the parameter out instead.", name)
		}
	}
	return nil
}

// Duplicate is the error of a single-valued query parameter given more than once.
func Duplicate(name string) *domainerr.Error {
	return domainerr.New(domainerr.Invalid, domainerr.CodeParameterDuplicate, name,
		"Received %s more than once: give each query parameter once (only array parameters, named with [], repeat).", name)
}

// List is the List object. Livemode says which mode's objects it holds (spec §2); a list that
// spans both modes (the admin API's keys of an account) has none.
type List[T any] struct {
	Object   string `json:"object"`
	Data     []T    `json:"data"`
	HasMore  bool   `json:"has_more"`
	URL      string `json:"url"`
	Livemode *bool  `json:"livemode,omitempty"`
}

// New returns a List of one mode's objects; a nil data renders as [] rather than null.
func New[T any](url string, livemode bool, data []T, hasMore bool) List[T] {
	l := Across(url, data, hasMore)
	l.Livemode = &livemode
	return l
}

// Across returns a List of objects of both modes, without livemode.
func Across[T any](url string, data []T, hasMore bool) List[T] {
	if data == nil {
		data = []T{}
	}
	return List[T]{Object: "list", Data: data, HasMore: hasMore, URL: url}
}
