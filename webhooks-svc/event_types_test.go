package main

import (
	"slices"
	"testing"

	"rentalplatform/libs/eventtype"
)

// GET /v1/event_types: the catalogue, ordered by type, filtered by family and emitted, paged
// with type names as cursors.
func TestEventTypes(t *testing.T) {
	t.Parallel()
	c := start(t).client(t)
	catalogue := eventtype.Catalogue()
	where := func(keep func(eventtype.Entry) bool) []string {
		var out []string
		for _, e := range catalogue {
			if keep(e) {
				out = append(out, e.Type)
			}
		}
		return out
	}
	all := where(func(eventtype.Entry) bool { return true })
	list := func(c *client, query string) ([]string, bool) {
		t.Helper()
		r := c.do("GET", "/v1/event_types"+query, "").wantOK(t)
		if r.body["object"] != "list" || r.str("url") != "/v1/event_types" || r.body["livemode"] != c.livemode {
			t.Fatalf("list object: %s", r.raw)
		}
		var out []string
		for _, e := range r.body["data"].([]any) {
			out = append(out, e.(map[string]any)["id"].(string))
		}
		return out, r.body["has_more"].(bool)
	}

	// The whole catalogue in one page, each type as the catalogue says.
	r := c.do("GET", "/v1/event_types?limit=100", "").wantOK(t)
	data := r.body["data"].([]any)
	if len(data) != len(catalogue) || r.body["has_more"] != false || len(catalogue) > 100 {
		t.Fatalf("%d types (has_more %v), want the %d of the catalogue", len(data), r.body["has_more"], len(catalogue))
	}
	for i, e := range catalogue {
		var schema any
		if e.Emitted {
			schema = e.Schema
		}
		want := map[string]any{"id": e.Type, "object": "event_type", "family": eventtype.Family(e.Type),
			"emitted": e.Emitted, "schema": schema, "description": e.Description}
		assertBody(t, response{body: data[i].(map[string]any)}, want)
	}
	if ch := data[slices.Index(all, eventtype.ChargeSucceeded)].(map[string]any); ch["schema"] != "Charge" || ch["emitted"] != true {
		t.Fatalf("charge.succeeded: %v", ch)
	}
	if inv := data[slices.Index(all, "invoice.paid")].(map[string]any); inv["schema"] != nil || inv["emitted"] != false {
		t.Fatalf("invoice.paid: %v", inv)
	}

	charges := where(func(e eventtype.Entry) bool { return eventtype.Family(e.Type) == "charge" })
	for _, tc := range []struct {
		query string
		want  []string
		more  bool
	}{
		{"", all[:10], true},
		{"?family=charge", charges, false},
		{"?family=charge&emitted=false", where(func(e eventtype.Entry) bool { return eventtype.Family(e.Type) == "charge" && !e.Emitted }), false},
		{"?emitted=true&limit=100", where(func(e eventtype.Entry) bool { return e.Emitted }), false},
		{"?emitted=false&limit=100", where(func(e eventtype.Entry) bool { return !e.Emitted }), false},
		{"?family=invoice&emitted=true", nil, false},
		{"?limit=3", all[:3], true},
		{"?limit=3&starting_after=" + all[2], all[3:6], true},
		{"?limit=3&ending_before=" + all[3], all[:3], false},
		{"?limit=3&ending_before=" + all[10], all[7:10], true},
		{"?starting_after=" + all[len(all)-1], nil, false},
		{"?ending_before=" + all[0], nil, false},
		{"?family=charge&starting_after=" + charges[1], charges[2:], false},
		{"?family=charge&limit=1&ending_before=" + charges[2], charges[1:2], true},
		// A cursor is a position: it need not be of the family listed.
		{"?family=charge&starting_after=balance.available", charges, false},
		{"?family=charge&ending_before=invoice.paid", charges, false},
	} {
		if got, more := list(c, tc.query); !slices.Equal(got, tc.want) || more != tc.more {
			t.Errorf("%s: %v (has_more %v), want %v (%v)", tc.query, got, more, tc.want, tc.more)
		}
	}
	// The catalogue is the same in either mode; the list says which one asked.
	if got, _ := list(c.otherMode(), "?limit=100"); !slices.Equal(got, all) {
		t.Fatalf("live mode lists %v", got)
	}

	for _, tc := range []struct{ query, code, param string }{
		{"?family=rocket", "parameter_invalid", "family"},
		{"?family=charge.succeeded", "parameter_invalid", "family"},
		{"?family=charge.*", "parameter_invalid", "family"},
		{"?family=", "parameter_invalid", "family"},
		{"?emitted=yes", "parameter_invalid", "emitted"},
		{"?emitted=TRUE", "parameter_invalid", "emitted"},
		{"?starting_after=charge.exploded", "parameter_invalid", "starting_after"},
		{"?ending_before=rocket", "parameter_invalid", "ending_before"},
		{"?starting_after=", "parameter_invalid", "starting_after"},
		{"?starting_after=charge.failed&ending_before=charge.succeeded", "parameters_exclusive", "ending_before"},
		{"?limit=0", "parameter_invalid", "limit"},
		{"?family=charge&family=invoice", "parameter_duplicate", "family"},
		{"?created[gte]=1", "parameter_unknown", "created[gte]"},
		{"?type=charge.succeeded", "parameter_unknown", "type"},
	} {
		c.do("GET", "/v1/event_types"+tc.query, "").wantError(t, 400, "invalid_request_error", tc.code, tc.param)
	}
}
