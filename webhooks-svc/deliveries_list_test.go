package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/ids"
)

// GET /v1/webhook_deliveries: every delivery of the caller's account and mode, newest first,
// filtered by endpoint, event, status and created, all combinable, and paginated.
func TestWebhookDeliveriesList(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t)
	good := newReceiver(t, always(200))
	bad := newReceiver(t, always(500))
	dest := newReceiver(t, always(200))
	before := time.Now().Unix()

	// e1: created of G, delivered to G. e2: created of B, delivered to G. e3: updated of B,
	// delivered to G (succeeds) and B (fails, after its retries). e4: an event with its own
	// destination, delivered there and to no endpoint.
	g := c.createEndpoint(good.url(), "webhook_endpoint.created", "webhook_endpoint.updated").str("id")
	b := c.createEndpoint(bad.url(), "webhook_endpoint.updated").str("id")
	c.do("POST", "/v1/webhook_endpoints/"+b, `{"description":"renamed"}`).wantOK(t)
	e4, err := eventstest.New(s.ids, time.Now(), eventstest.Change{
		Type: "verification_session.created", Account: c.account,
		Object:      map[string]any{"id": "vs_1", "object": "verification_session"},
		Destination: &events.Destination{URL: dest.url(), Secret: ids.StdSecret("whsec_", 32)},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.publish(t, e4)
	// Another account and the other mode, each with a delivery of its own.
	stranger, otherMode := s.client(t), c.otherMode()
	strangers := stranger.createEndpoint(good.url(), "*").str("id")
	otherMode.createEndpoint(good.url(), "*")

	list := func(c *client, query string) response {
		t.Helper()
		r := c.do("GET", "/v1/webhook_deliveries"+query, "").wantOK(t)
		if r.body["object"] != "list" || r.str("url") != "/v1/webhook_deliveries" || r.body["livemode"] != c.livemode {
			t.Fatalf("list object: %s", r.raw)
		}
		return r
	}
	idsOf := func(r response) []string {
		var out []string
		for _, d := range r.body["data"].([]any) {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		return out
	}
	var ds []map[string]any
	eventually(t, 20*time.Second, func() bool {
		ds = nil
		for _, d := range list(c, "?limit=100").body["data"].([]any) {
			ds = append(ds, d.(map[string]any))
		}
		settled := 0
		for _, d := range ds {
			if d["status"] != "pending" {
				settled++
			}
		}
		return len(ds) == 5 && settled == 5
	}, "five settled deliveries")
	evs := c.eventIDs("")
	if len(evs) != 4 {
		t.Fatalf("events %v", evs)
	}
	e3, e2, e1 := evs[1], evs[2], evs[3]
	if evs[0] != e4.ID {
		t.Fatalf("events %v, want %s newest", evs, e4.ID)
	}
	// Each listed delivery is the object the event's deliveries show.
	byEvent := map[string]int{}
	for _, d := range ds {
		byEvent[d["event"].(string)]++
		var same map[string]any
		for _, o := range c.deliveries("/v1/events/" + d["event"].(string) + "/deliveries") {
			if o["id"] == d["id"] {
				same = o
			}
		}
		got, _ := json.Marshal(d)
		want, _ := json.Marshal(same)
		if string(got) != string(want) {
			t.Fatalf("listed %s\nthe event's deliveries show %s", got, want)
		}
	}
	if byEvent[e1] != 1 || byEvent[e2] != 1 || byEvent[e3] != 2 || byEvent[e4.ID] != 1 {
		t.Fatalf("deliveries by event %v", byEvent)
	}
	if !slices.IsSortedFunc(ds, func(a, b map[string]any) int { return strings.Compare(b["id"].(string), a["id"].(string)) }) {
		t.Fatal("deliveries are not newest first")
	}

	// The expected answer of each filter is the whole list narrowed by what it says.
	where := func(keep func(d map[string]any) bool) []string {
		var out []string
		for _, d := range ds {
			if keep(d) {
				out = append(out, d["id"].(string))
			}
		}
		return out
	}
	to := func(ep string) func(map[string]any) bool {
		return func(d map[string]any) bool { return d["webhook_endpoint"] == ep }
	}
	of := func(ev string) func(map[string]any) bool {
		return func(d map[string]any) bool { return d["event"] == ev }
	}
	status := func(st string) func(map[string]any) bool {
		return func(d map[string]any) bool { return d["status"] == st }
	}
	and := func(fs ...func(map[string]any) bool) func(map[string]any) bool {
		return func(d map[string]any) bool {
			for _, f := range fs {
				if !f(d) {
					return false
				}
			}
			return true
		}
	}
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", where(and())},
		{"?endpoint=" + g, where(to(g))},
		{"?endpoint=" + b, where(to(b))},
		{"?event=" + e3, where(of(e3))},
		{"?event=" + e4.ID, where(of(e4.ID))},
		{"?status=succeeded", where(status("succeeded"))},
		{"?status=failed", where(status("failed"))},
		{"?status=pending", nil},
		{"?endpoint=" + b + "&status=failed", where(and(to(b), status("failed")))},
		{"?endpoint=" + b + "&status=succeeded", nil},
		{"?endpoint=" + g + "&event=" + e2 + "&status=succeeded", where(and(to(g), of(e2)))},
		{"?event=" + e3 + "&status=succeeded&created[gte]=" + strconv.FormatInt(before, 10), where(and(of(e3), status("succeeded")))},
		{"?created[gte]=" + strconv.FormatInt(before, 10) + "&created[lte]=" + future, where(and())},
		{"?created[gte]=" + future, nil},
		{"?created[lte]=" + strconv.FormatInt(before-1, 10), nil},
		{"?endpoint=" + strangers, nil},
		{"?endpoint=" + s.ids.New(ids.WebhookEndpoint), nil},
	} {
		if got := idsOf(list(c, tc.query)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	if len(where(to(g))) != 3 || len(where(status("failed"))) != 1 || len(where(of(e3))) != 2 {
		t.Fatalf("the fixture is not what the filters are meant to tell apart: %v", ds)
	}

	// Pages, forwards and backwards.
	all := where(and())
	for _, tc := range []struct {
		query string
		want  []string
		more  bool
	}{
		{"?limit=2", all[:2], true},
		{"?limit=2&starting_after=" + all[1], all[2:4], true},
		{"?limit=2&starting_after=" + all[3], all[4:], false},
		{"?limit=1&ending_before=" + all[2], all[1:2], true},
		{"?limit=3&ending_before=" + all[2], all[:2], false},
		{"?limit=1&status=succeeded&starting_after=" + where(status("succeeded"))[0], where(status("succeeded"))[1:2], true},
	} {
		r := list(c, tc.query)
		if got := idsOf(r); !slices.Equal(got, tc.want) || r.body["has_more"] != tc.more {
			t.Errorf("%s: %v (has_more %v), want %v (%v)", tc.query, got, r.body["has_more"], tc.want, tc.more)
		}
	}

	// Another account or mode lists its own delivery only.
	for _, other := range []*client{stranger, otherMode} {
		var got []string
		eventually(t, 20*time.Second, func() bool { got = idsOf(list(other, "")); return len(got) == 1 }, "one delivery of its own")
		if slices.Contains(all, got[0]) {
			t.Fatalf("another account or mode lists %s", got[0])
		}
		if got := idsOf(list(other, "?endpoint="+g)); len(got) != 0 {
			t.Fatalf("another account or mode lists deliveries to %s: %v", g, got)
		}
	}

	for _, tc := range []struct{ query, code, param string }{
		{"?endpoint=" + e1, "parameter_invalid", "endpoint"},
		{"?endpoint=we_short", "parameter_invalid", "endpoint"},
		{"?event=" + g, "parameter_invalid", "event"},
		{"?event=evt_" + g[3:] + "x", "parameter_invalid", "event"},
		{"?status=done", "parameter_invalid", "status"},
		{"?status=Succeeded", "parameter_invalid", "status"},
		{"?status=", "parameter_invalid", "status"},
		{"?status=failed&status=pending", "parameter_duplicate", "status"},
		{"?created[gte]=yesterday", "parameter_invalid", "created[gte]"},
		{"?created[lte]=-1", "parameter_invalid", "created[lte]"},
		{"?limit=101", "parameter_invalid", "limit"},
		{"?starting_after=" + e1, "parameter_invalid", "starting_after"},
		{"?starting_after=" + all[0] + "&ending_before=" + all[1], "parameters_exclusive", "ending_before"},
		{"?type=webhook_endpoint.created", "parameter_unknown", "type"},
		{"?webhook_endpoint=" + g, "parameter_unknown", "webhook_endpoint"},
	} {
		c.do("GET", "/v1/webhook_deliveries"+tc.query, "").wantError(t, 400, "invalid_request_error", tc.code, tc.param)
	}
}
