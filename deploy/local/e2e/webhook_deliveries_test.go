package e2e

// The account-wide delivery list (GET /v1/webhook_deliveries) and the event catalogue
// (GET /v1/event_types) through the gateway (issue 27), with API keys of two accounts and both
// modes and with restricted keys: the gateway reads deliveries under the webhook_endpoints
// permission and event types under the events permission.

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
)

func TestWebhookDeliveriesAndEventTypes(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: deliveryEnv("1s")})
	t.Cleanup(func() { p.noDeaths(t) })
	rx := receiver.New(t)
	rx.Script("/fail", receiver.Status(http.StatusInternalServerError))
	key := p.newKey(t, "acct_wd", false)
	live := p.newKey(t, "acct_wd", true)
	other := p.newKey(t, "acct_wdother", false)
	deliveries := p.GatewayURL + "/v1/webhook_deliveries"

	// good gets the created events of both endpoints and the update of bad; bad gets its own
	// update and fails it (once retried). The other account and the live mode have one
	// delivery each.
	good, _ := p.createEndpoint(t, key, rx.URL()+"/ok", "webhook_endpoint.created", "webhook_endpoint.updated")
	bad, _ := p.createEndpoint(t, key, rx.URL()+"/fail", "webhook_endpoint.updated")
	p.updateTrigger(t, key, bad, map[string]any{"description": "renamed"})
	p.createEndpoint(t, other, rx.URL()+"/ok", "*")
	p.createEndpoint(t, live, rx.URL()+"/ok", "*")

	var all []map[string]any
	deadline := time.Now().Add(deliveryWait)
	for {
		all = listAll(t, key, deliveries)
		settled := 0
		for _, d := range all {
			if d["status"] != "pending" {
				settled++
			}
		}
		if len(all) == 4 && settled == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %v, want 4 settled", all)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.IsSortedFunc(all, func(a, b map[string]any) int { return strings.Compare(b["id"].(string), a["id"].(string)) }) {
		t.Fatal("deliveries are not newest first")
	}
	idsOf := func(ds []map[string]any) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d["id"].(string))
		}
		return out
	}
	where := func(keep func(map[string]any) bool) []string {
		var out []map[string]any
		for _, d := range all {
			if keep(d) {
				out = append(out, d)
			}
		}
		return idsOf(out)
	}
	update := p.waitEvent(t, key, "webhook_endpoint.updated", bad, deliveryWait)["id"].(string)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?endpoint=" + good, where(func(d map[string]any) bool { return d["webhook_endpoint"] == good })},
		{"?endpoint=" + bad + "&status=failed", where(func(d map[string]any) bool { return d["webhook_endpoint"] == bad })},
		{"?event=" + update, where(func(d map[string]any) bool { return d["event"] == update })},
		{"?status=succeeded&event=" + update, where(func(d map[string]any) bool { return d["event"] == update && d["webhook_endpoint"] == good })},
		{"?status=pending", nil},
		{"?created[gte]=" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), nil},
	} {
		if got := idsOf(listAll(t, key, deliveries+tc.query)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	if n := len(where(func(d map[string]any) bool { return d["webhook_endpoint"] == good })); n != 3 {
		t.Fatalf("%d deliveries to good, want 3: %v", n, all)
	}
	res := call(t, "GET", deliveries+"?limit=1", key, nil)
	if res.Status != 200 || res.Body["url"] != "/v1/webhook_deliveries" || res.Body["livemode"] != false || res.Body["has_more"] != true {
		t.Fatalf("list object: %d %s", res.Status, res.Raw)
	}
	if res := call(t, "GET", deliveries+"?status=done", key, nil); res.Status != 400 || res.errCode() != "parameter_invalid" || res.errParam() != "status" {
		t.Fatalf("status=done: %d %s", res.Status, res.Raw)
	}
	// Another account or mode lists its own delivery, never these.
	for _, k := range []string{other, live} {
		ds := listAll(t, k, deliveries)
		if len(ds) > 1 || (len(ds) == 1 && slices.Contains(idsOf(all), ds[0]["id"].(string))) {
			t.Fatalf("another account or mode lists %v", ds)
		}
		if ds := listAll(t, k, deliveries+"?endpoint="+good); len(ds) != 0 {
			t.Fatalf("another account or mode lists deliveries to %s: %v", good, ds)
		}
	}

	// The catalogue: every type once, in id order; the charge family as the spec names it.
	types := listAll(t, key, p.GatewayURL+"/v1/event_types")
	if len(types) < 80 || !slices.IsSortedFunc(types, func(a, b map[string]any) int { return strings.Compare(a["id"].(string), b["id"].(string)) }) {
		t.Fatalf("event types: %d, in order: %v", len(types), types)
	}
	charges := listAll(t, key, p.GatewayURL+"/v1/event_types?family=charge&emitted=true")
	if got := idsOf(charges); !slices.Equal(got, []string{"charge.failed", "charge.succeeded"}) || charges[0]["schema"] != "Charge" {
		t.Fatalf("emitted charge types: %v", charges)
	}
	if res := call(t, "GET", p.GatewayURL+"/v1/event_types?starting_after=charge.exploded", key, nil); res.Status != 400 || res.errParam() != "starting_after" {
		t.Fatalf("unknown cursor: %d %s", res.Status, res.Raw)
	}

	// Restricted keys: deliveries are read with webhook_endpoints, event types with events.
	for _, tc := range []struct {
		perms     map[string]string
		wantLists [2]int // deliveries, event types
	}{
		{map[string]string{"webhook_endpoints": "read"}, [2]int{200, 403}},
		{map[string]string{"events": "read"}, [2]int{403, 200}},
	} {
		k := p.admin(t, "POST", "/admin/api_keys", map[string]any{"account": "acct_wd", "permissions": tc.perms}, http.StatusCreated)
		secret := k["secret"].(string)
		for i, u := range []string{deliveries, p.GatewayURL + "/v1/event_types"} {
			if res := call(t, "GET", u, secret, nil); res.Status != tc.wantLists[i] {
				t.Fatalf("%v: GET %s: %d %s, want %d", tc.perms, u, res.Status, res.Raw, tc.wantLists[i])
			}
		}
	}
}
