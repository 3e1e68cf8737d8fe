// Package listing parses the list parameters every list operation shares and shapes the List
// object. Lists are newest first and keyed by the object id, which is time-ordered (package ids),
// so a cursor is just an id.
package listing

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"rentalplatform/libs/apierr"
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
func Parse(q url.Values, spec Spec) (Params, error) {
	p := Params{Limit: DefaultLimit}
	if err := checkKnown(q, spec); err != nil {
		return Params{}, err
	}
	if v, ok := single(q, "limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return Params{}, apierr.Invalid(apierr.CodeParameterInvalid, "limit",
				fmt.Sprintf("Invalid limit: must be an integer from 1 to %d, got '%s'.", MaxLimit, v))
		}
		p.Limit = n
	}
	for _, c := range []struct {
		name string
		dst  *string
	}{{"starting_after", &p.StartingAfter}, {"ending_before", &p.EndingBefore}} {
		v, ok := single(q, c.name)
		if !ok {
			continue
		}
		if !strings.HasPrefix(v, spec.IDPrefix) || len(v) == len(spec.IDPrefix) || len(v) > 128 {
			return Params{}, apierr.Invalid(apierr.CodeParameterInvalid, c.name,
				fmt.Sprintf("Invalid %s: expected an id starting with '%s', got '%s'.", c.name, spec.IDPrefix, v))
		}
		*c.dst = v
	}
	if p.StartingAfter != "" && p.EndingBefore != "" {
		return Params{}, apierr.Invalid(apierr.CodeParametersExclusive, "ending_before",
			"starting_after and ending_before cannot be used together.")
	}
	if spec.Created {
		for _, c := range []struct {
			name string
			dst  **int64
		}{{"created[gte]", &p.CreatedGTE}, {"created[lte]", &p.CreatedLTE}} {
			v, ok := single(q, c.name)
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return Params{}, apierr.Invalid(apierr.CodeParameterInvalid, c.name,
					fmt.Sprintf("Invalid %s: expected a Unix timestamp, got '%s'.", c.name, v))
			}
			*c.dst = &n
		}
	}
	return p, nil
}

// single returns the only value of name; an empty value counts as absent.
func single(q url.Values, name string) (string, bool) {
	v := q.Get(name)
	return v, v != ""
}

func checkKnown(q url.Values, spec Spec) error {
	var unknown []string
	for name := range q {
		switch name {
		case "limit", "starting_after", "ending_before":
			continue
		case "created[gte]", "created[lte]":
			if spec.Created {
				continue
			}
		}
		known := false
		for _, f := range spec.Filters {
			if name == f {
				known = true
				break
			}
		}
		if !known {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	e := apierr.Unknown(unknown[0])
	if len(unknown) > 1 {
		e.Message = fmt.Sprintf("Received unknown parameters: %s.", strings.Join(unknown, ", "))
	}
	return e
}

// List is the List object.
type List[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
	URL     string `json:"url"`
}

// New returns a List; a nil data renders as [] rather than null.
func New[T any](url string, data []T, hasMore bool) List[T] {
	if data == nil {
		data = []T{}
	}
	return List[T]{Object: "list", Data: data, HasMore: hasMore, URL: url}
}
