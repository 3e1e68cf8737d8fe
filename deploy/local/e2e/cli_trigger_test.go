package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/eventtype"

	"rentalplatform/deploy/local/e2e/receiver"
)

// triggerWait bounds the wait for the events a trigger causes: most are raised by the calls
// themselves, the payments' by the first attempt (a task run at once), and
// webhook_endpoint.disabled by a delivery answered 410.
const triggerWait = 30 * time.Second

// cliJSON decodes a run's standard output, failing the test when the run failed.
func cliJSON[T any](t *testing.T, r cliRun, what string) T {
	t.Helper()
	var v T
	if r.code != 0 {
		t.Fatalf("%s: exit %d\n%s\n%s", what, r.code, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("%s: %v in %q", what, err, r.stdout)
	}
	return v
}

// The CLI's trigger, events and deliveries commands against one started platform: every
// emitted type triggered in an account of its own and its event listed; then an event's
// deliveries listed, filtered, resent and retried, arriving again at a receiver with the same
// webhook-id.
func TestCLITriggerEventsDeliveries(t *testing.T) {
	p := startWith(t, stackConfig{env: deliveryEnv("1s,2s,3s")})
	t.Cleanup(func() { p.noDeaths(t) })
	bin := buildCLI(t)
	rx := receiver.New(t)
	rx.Script("/gone", receiver.Gone())
	envFor := func(key string) map[string]string {
		return map[string]string{"RENTAL_API_BASE": p.GatewayURL, "RENTAL_API_KEY": key}
	}

	// The recipes cover exactly the types the platform emits: its catalogue (libs/eventtype)
	// and what GET /v1/event_types says.
	var recipes []string
	t.Run("the recipes are the emitted types", func(t *testing.T) {
		key := p.newKey(t, "acct_trigger", false)
		list := cliJSON[struct {
			Data []struct {
				Type  string   `json:"type"`
				Needs []string `json:"needs"`
			} `json:"data"`
		}](t, runCLI(t, bin, "", envFor(key), "trigger", "--list", "--json"), "trigger --list --json")
		for _, r := range list.Data {
			recipes = append(recipes, r.Type)
		}
		var catalogue, api []string
		for _, e := range eventtype.Catalogue() {
			if e.Emitted {
				catalogue = append(catalogue, e.Type)
			}
		}
		for _, e := range listAll(t, key, p.GatewayURL+"/v1/event_types?emitted=true") {
			api = append(api, e["id"].(string))
		}
		slices.Sort(api)
		if !slices.Equal(recipes, catalogue) || !slices.Equal(recipes, api) {
			t.Fatalf("recipes %v\nlibs/eventtype emits %v\nGET /v1/event_types?emitted=true %v", recipes, catalogue, api)
		}
		// Without --json, and without an argument, the same list for people.
		r := runCLI(t, bin, "", envFor(key), "trigger")
		if r.code != 0 || strings.Count(r.stdout, "\n") != len(recipes)+1 || !strings.Contains(r.stdout, "(needs --gone-url)") {
			t.Fatalf("trigger without an argument: %d %q", r.code, r.stdout)
		}
	})
	if len(recipes) == 0 {
		t.Fatal("no recipes listed")
	}

	t.Run("every type", func(t *testing.T) {
		started := time.Now()
		keys := map[string]string{}
		for i, typ := range recipes {
			// An account per type: the event of the type is the trigger's and no other's.
			key := p.newKey(t, fmt.Sprintf("acct_trigger%d", i), false)
			keys[typ] = key
			argv := []string{"trigger", typ, "--json"}
			if typ == eventtype.WebhookEndpointDisabled {
				argv = append(argv, "--gone-url", rx.URL()+"/gone")
			}
			r := runCLI(t, bin, "", envFor(key), argv...)
			out := cliJSON[struct {
				Type     string            `json:"type"`
				Fixtures map[string]string `json:"fixtures"`
			}](t, r, "trigger "+typ)
			if out.Type != typ || len(out.Fixtures) == 0 {
				t.Errorf("trigger %s --json: %s", typ, r.stdout)
			}
			for name, id := range out.Fixtures {
				if !strings.Contains(id, "_") {
					t.Errorf("trigger %s: fixture %s has id %q", typ, name, id)
				}
			}
			// With --json the calls are told on standard error, standard output is the JSON.
			if !strings.HasPrefix(r.stderr, "Setting up fixture for: "+typ+"\nRunning fixture: POST /v1/") ||
				!strings.HasSuffix(r.stderr, "Trigger succeeded! Check the events at rental events list\n") {
				t.Errorf("trigger %s: standard error %q", typ, r.stderr)
			}
		}
		// Every type's event is listed in its account (by rental events list --type), within a
		// bounded wait.
		pending := slices.Clone(recipes)
		deadline := time.Now().Add(triggerWait)
		for len(pending) > 0 {
			pending = slices.DeleteFunc(pending, func(typ string) bool {
				page := cliJSON[struct {
					Data []struct {
						Type string `json:"type"`
					} `json:"data"`
				}](t, runCLI(t, bin, "", envFor(keys[typ]), "events", "list", "--type", typ, "--limit", "1", "--json"), "events list --type "+typ)
				return len(page.Data) == 1 && page.Data[0].Type == typ
			})
			if len(pending) > 0 && time.Now().After(deadline) {
				t.Fatalf("no event listed within %s for %v", triggerWait, pending)
			}
			if len(pending) > 0 {
				time.Sleep(200 * time.Millisecond)
			}
		}
		t.Logf("%d types triggered and their events listed in %s", len(recipes), time.Since(started).Round(time.Millisecond))
		// The endpoint at the gone URL was disabled by the 410.
		if reqs := rx.Requests("/gone"); len(reqs) != 1 || reqs[0].Status != 410 {
			t.Errorf("the gone receiver: %s", receiver.Summary(reqs))
		}
	})

	t.Run("human output", func(t *testing.T) {
		key := p.newKey(t, "acct_triggerhuman", false)
		r := runCLI(t, bin, "", envFor(key), "trigger", "payment_request.cancelled")
		want := "Setting up fixture for: payment_request.cancelled\n" +
			"Running fixture: POST /v1/payment_agreements\n" +
			"Running fixture: POST /v1/payment_requests\n" +
			"Running fixture: POST /v1/payment_requests/preq_"
		// Into a pipe: no colour codes.
		if r.code != 0 || !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "/cancel\nTrigger succeeded! Check the events at rental events list\n") ||
			strings.Contains(r.stdout, "\x1b[") || r.stderr != "" {
			t.Fatalf("trigger payment_request.cancelled: %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		live := p.newKey(t, "acct_triggerlive", true)
		test := p.newKey(t, "acct_triggerrefused", false)
		for _, c := range []struct {
			key  string
			argv []string
			want string
		}{
			{live, []string{"trigger", "collection_case.created"}, "is a live key"},
			{test, []string{"trigger", "balance.available"}, "balance.available is reserved, never emitted"},
			{test, []string{"trigger", "payment_intent.succeeded"}, "subscribe to payment_request.succeeded"},
			{test, []string{"trigger", "payment_request.nope"}, `"payment_request.nope" is not an event type`},
			{test, []string{"trigger", "nope.nope"}, `"nope.nope" is not an event type`},
			{test, []string{"trigger", "webhook_endpoint.disabled"}, "cannot be caused through the API alone"},
			{test, []string{"trigger", "charge.failed", "--gone-url", "https://example.com/x"}, "--gone-url is for webhook_endpoint.disabled only"},
			{test, []string{"trigger", "a", "b"}, "accepts at most 1 arg"},
			{test, []string{"events", "get", "wd_123"}, `"wd_123" is not an event id`},
			{test, []string{"events", "resend", "evt_1", "--webhook-endpoint", "x"}, `"x" is not a webhook endpoint id`},
			{test, []string{"deliveries", "retry", "evt_1"}, `"evt_1" is not a webhook delivery id`},
		} {
			r := runCLI(t, bin, "", envFor(c.key), c.argv...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stdout+r.stderr, "Running fixture") {
				t.Errorf("%v: exit %d, %q; want 2 and %q, nothing sent", c.argv, r.code, r.stderr, c.want)
			}
		}
		// Nothing was created with the live key, nor in the test account.
		for _, k := range []string{live, test} {
			if evs := listAll(t, k, p.GatewayURL+"/v1/events"); len(evs) != 0 {
				t.Errorf("refused triggers caused %d events", len(evs))
			}
		}
	})

	t.Run("events and deliveries", func(t *testing.T) {
		key := p.newKey(t, "acct_clievents", false)
		env := envFor(key)
		ep, _ := p.createEndpoint(t, key, rx.URL()+"/hooks", eventtype.CollectionCaseCreated)
		other, _ := p.createEndpoint(t, key, rx.URL()+"/other", eventtype.CollectionCaseCreated)
		out := cliJSON[struct {
			Fixtures map[string]string `json:"fixtures"`
		}](t, runCLI(t, bin, "", env, "trigger", "collection_case.created", "--json"), "trigger")
		dc := out.Fixtures["case"]
		first := rx.WaitUntil(t, "/hooks", deliveryWait, "the case's event", hasAbout(eventtype.CollectionCaseCreated, dc, 1))
		rx.WaitUntil(t, "/other", deliveryWait, "the case's event", hasAbout(eventtype.CollectionCaseCreated, dc, 1))
		evt := first[0].ID()

		// events list: filtered by type, a page of one, the next page after it.
		type list struct {
			Data []struct {
				ID   string `json:"id"`
				Type string `json:"type"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		page := cliJSON[list](t, runCLI(t, bin, "", env, "events", "list", "--type", "collection_case.created", "--limit", "1", "--json"), "events list")
		if len(page.Data) != 1 || page.Data[0].ID != evt || page.HasMore {
			t.Fatalf("events list --type collection_case.created --limit 1: %+v; want %s alone", page, evt)
		}
		page = cliJSON[list](t, runCLI(t, bin, "", env, "events", "list", "--json"), "events list")
		if len(page.Data) != 3 { // two webhook_endpoint.created, one collection_case.created
			t.Fatalf("events list: %+v", page)
		}
		next := cliJSON[list](t, runCLI(t, bin, "", env, "events", "list", "--limit", "2", "--starting-after", page.Data[0].ID, "--json"), "events list --starting-after")
		if len(next.Data) != 2 || next.Data[0].ID != page.Data[1].ID || next.HasMore {
			t.Fatalf("events list --starting-after %s: %+v", page.Data[0].ID, next)
		}
		r := runCLI(t, bin, "", env, "events", "list", "--type", "nope.nope")
		if r.code != 1 || !strings.Contains(r.stderr, "[param type]") || !strings.Contains(r.stdout, `"code": "parameter_invalid"`) {
			t.Fatalf("events list --type nope.nope: %d %q %q", r.code, r.stdout, r.stderr)
		}
		r = runCLI(t, bin, "", env, "events", "list", "--limit", "ten")
		if r.code != 2 {
			t.Fatalf("events list --limit ten: %d %q", r.code, r.stderr)
		}

		// events get: indented by default, one line with --json; a missing one is 404.
		r = runCLI(t, bin, "", env, "events", "get", evt)
		if r.code != 0 || !strings.Contains(r.stdout, "\n  \"id\": \""+evt+"\"") {
			t.Fatalf("events get: %d %q", r.code, r.stdout)
		}
		r = runCLI(t, bin, "", env, "events", "get", evt, "--json")
		if r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 || !strings.Contains(r.stdout, `"type":"collection_case.created"`) {
			t.Fatalf("events get --json: %d %q", r.code, r.stdout)
		}
		missing := "evt_" + strings.Repeat("0", len(evt)-len("evt_"))
		if r := runCLI(t, bin, "", env, "events", "get", missing); r.code != 1 || !strings.Contains(r.stderr, "404") {
			t.Fatalf("events get %s: %d %q", missing, r.code, r.stderr)
		}

		// deliveries list: by event, by endpoint, by status (once both succeeded).
		type deliveries struct {
			Data []struct {
				ID              string `json:"id"`
				Event           string `json:"event"`
				WebhookEndpoint string `json:"webhook_endpoint"`
				Status          string `json:"status"`
			} `json:"data"`
		}
		byEvent := cliJSON[deliveries](t, runCLI(t, bin, "", env, "deliveries", "list", "--event", evt, "--json"), "deliveries list --event")
		if len(byEvent.Data) != 2 {
			t.Fatalf("deliveries list --event %s: %+v", evt, byEvent)
		}
		byEndpoint := cliJSON[deliveries](t, runCLI(t, bin, "", env, "deliveries", "list", "--event", evt, "--endpoint", ep, "--json"), "deliveries list --endpoint")
		if len(byEndpoint.Data) != 1 || byEndpoint.Data[0].WebhookEndpoint != ep || byEndpoint.Data[0].Event != evt {
			t.Fatalf("deliveries list --endpoint %s: %+v", ep, byEndpoint)
		}
		toEp := byEndpoint.Data[0].ID
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			ok := cliJSON[deliveries](t, runCLI(t, bin, "", env, "deliveries", "list", "--event", evt, "--status", "succeeded", "--json"), "deliveries list --status")
			if len(ok.Data) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("deliveries list --status succeeded: %+v", ok)
			}
		}
		if none := cliJSON[deliveries](t, runCLI(t, bin, "", env, "deliveries", "list", "--event", evt, "--status", "failed", "--json"), "deliveries list --status failed"); len(none.Data) != 0 {
			t.Fatalf("deliveries list --status failed: %+v", none)
		}
		if r := runCLI(t, bin, "", env, "deliveries", "list", "--status", "lost"); r.code != 1 || !strings.Contains(r.stderr, "[param status]") {
			t.Fatalf("deliveries list --status lost: %d %q", r.code, r.stderr)
		}

		// events resend: one more attempt of each delivery, the same webhook-id.
		r = runCLI(t, bin, "", env, "events", "resend", evt, "--json")
		resent := cliJSON[deliveries](t, r, "events resend")
		if len(resent.Data) != 2 || strings.Count(r.stderr, "Retried wd_") != 2 {
			t.Fatalf("events resend: %s\n%s", r.stdout, r.stderr)
		}
		for _, path := range []string{"/hooks", "/other"} {
			reqs := rx.WaitUntil(t, path, deliveryWait, "the resent event", hasAbout(eventtype.CollectionCaseCreated, dc, 2))
			if reqs[1].ID() != evt {
				t.Errorf("%s: the resent event's webhook-id %q, want %s", path, reqs[1].ID(), evt)
			}
		}
		// --webhook-endpoint: only that endpoint's delivery.
		r = runCLI(t, bin, "", env, "events", "resend", evt, "--webhook-endpoint", ep)
		if r.code != 0 || !strings.Contains(r.stdout, `"id": "`+toEp+`"`) || strings.Count(r.stdout, `"object": "webhook_delivery"`) != 1 {
			t.Fatalf("events resend --webhook-endpoint: %d %s %s", r.code, r.stdout, r.stderr)
		}
		rx.WaitUntil(t, "/hooks", deliveryWait, "the event resent to one endpoint", hasAbout(eventtype.CollectionCaseCreated, dc, 3))
		if r := runCLI(t, bin, "", env, "events", "resend", evt, "--webhook-endpoint", "we_nothere1"); r.code != 1 || !strings.Contains(r.stderr, "has no delivery to we_nothere1") {
			t.Fatalf("events resend to an endpoint without a delivery: %d %q", r.code, r.stderr)
		}

		// deliveries retry: one more attempt, the same webhook-id.
		r = runCLI(t, bin, "", env, "deliveries", "retry", toEp, "--json")
		if d := cliJSON[map[string]any](t, r, "deliveries retry"); d["id"] != toEp {
			t.Fatalf("deliveries retry: %s", r.stdout)
		}
		reqs := rx.WaitUntil(t, "/hooks", deliveryWait, "the retried delivery", hasAbout(eventtype.CollectionCaseCreated, dc, 4))
		if reqs[3].ID() != evt {
			t.Errorf("the retried delivery's webhook-id %q, want %s", reqs[3].ID(), evt)
		}
		if n := len(about(rx.Requests("/other"), eventtype.CollectionCaseCreated, dc)); n != 2 {
			t.Errorf("/other got the event %d times, want 2 (the first delivery and the resend to all)", n)
		}
		// A disabled endpoint's delivery is skipped by resend, refused by retry.
		otherDelivery := func(a, b string) string {
			if a == toEp {
				return b
			}
			return a
		}
		p.updateTrigger(t, key, other, map[string]any{"status": "disabled"})
		r = runCLI(t, bin, "", env, "events", "resend", evt)
		if r.code != 0 || !strings.Contains(r.stdout, "Skipped "+otherDelivery(byEvent.Data[0].ID, byEvent.Data[1].ID)) || strings.Count(r.stdout, "Retried") != 1 {
			t.Fatalf("events resend with a disabled endpoint: %d %s %s", r.code, r.stdout, r.stderr)
		}
		if r := runCLI(t, bin, "", env, "deliveries", "retry", otherDelivery(byEvent.Data[0].ID, byEvent.Data[1].ID)); r.code != 1 || !strings.Contains(r.stderr, "invalid_state") {
			t.Fatalf("deliveries retry to a disabled endpoint: %d %q", r.code, r.stderr)
		}
	})
}
