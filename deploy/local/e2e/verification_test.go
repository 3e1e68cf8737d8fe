package e2e

// Verification sessions end to end (issue 12 §4): everything through the gateway with API
// keys; events delivered to a TLS receiver on 127.0.0.1 and checked with the independent
// Standard Webhooks verifier. One stack for the lifecycle (each subtest its own account, in
// parallel) and one with a short session lifetime for expiry.

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
)

// verificationEnv is the stack of these tests: deliveries to local receivers (a short retry
// schedule, guards lifted for 127.0.0.1 and a self-signed certificate), webhook_url on
// 127.0.0.1 allowed, and extra settings.
func verificationEnv(extra ...string) map[string]string {
	env := deliveryEnv("1s,2s,3s")
	env["VERIFICATION_WEBHOOK_ALLOW_PRIVATE"] = "true"
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// verificationTypes are every event a session raises.
var verificationTypes = []string{
	"verification_session.created", "verification_session.pending", "verification_session.processing",
	"verification_session.completed", "verification_session.failed", "verification_session.expired",
	"verification_session.canceled", "verification_session.redacted", "verification_report.created",
}

// sessionBody is a create request for an applicant with the given email.
func sessionBody(email string, extra map[string]any) map[string]any {
	b := map[string]any{
		"applicant": map[string]any{"first_name": "Jane", "last_name": "Doe", "email": email, "date_of_birth": "1990-02-28",
			"phone": "+4915112345678", "address": map[string]any{"line1": "1 Main St", "city": "Berlin", "postal_code": "10115", "country": "DE"}},
		"products": []string{"identity", "income", "credit"},
		"metadata": map[string]string{"unit": "4B"},
	}
	maps.Copy(b, extra)
	return b
}

// vs is a client of the verification API for one key.
type vs struct {
	t   *testing.T
	p   *platform
	key string
}

func (c vs) create(body map[string]any) response {
	c.t.Helper()
	res := call(c.t, "POST", c.p.GatewayURL+"/v1/verification_sessions", c.key, body)
	if res.Status != 200 {
		c.t.Fatalf("create: %d %s", res.Status, res.Raw)
	}
	return res
}

func (c vs) get(id string) response {
	c.t.Helper()
	return call(c.t, "GET", c.p.GatewayURL+"/v1/verification_sessions/"+id, c.key, nil)
}

func (c vs) advance(id string, body map[string]any) response {
	c.t.Helper()
	return call(c.t, "POST", c.p.GatewayURL+"/v1/test_helpers/verification_sessions/"+id+"/advance", c.key, body)
}

// walk advances id through statuses, each of which must be accepted.
func (c vs) walk(id string, statuses ...string) response {
	c.t.Helper()
	var res response
	for _, st := range statuses {
		if res = c.advance(id, map[string]any{"status": st}); res.Status != 200 || res.Body["status"] != st {
			c.t.Fatalf("advance %s to %s: %d %s", id, st, res.Status, res.Raw)
		}
	}
	return res
}

func (c vs) cancel(id string, body map[string]any) response {
	c.t.Helper()
	if body == nil {
		return call(c.t, "POST", c.p.GatewayURL+"/v1/verification_sessions/"+id+"/cancel", c.key, nil)
	}
	return call(c.t, "POST", c.p.GatewayURL+"/v1/verification_sessions/"+id+"/cancel", c.key, body)
}

func sub(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

// wantErr checks an error answer.
func wantErr(t *testing.T, res response, status int, code, param string) {
	t.Helper()
	if res.Status != status || res.errCode() != code || res.errParam() != param {
		t.Fatalf("got %d %s; want %d %s naming %q", res.Status, res.Raw, status, code, param)
	}
}

// sequence is the types of the events in reqs about any of ids, in the order the platform
// raised them (event ids are time-ordered), each event once (a retried delivery repeats it).
func sequence(reqs []receiver.Request, ids ...string) []string {
	byID := map[string]string{}
	for _, q := range reqs {
		e := q.Event()
		if slices.Contains(ids, e.ObjectID()) {
			byID[e.ID] = e.Type
		}
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[id])
	}
	return out
}

func hasSequence(want []string, ids ...string) func([]receiver.Request) bool {
	return func(reqs []receiver.Request) bool { return len(sequence(reqs, ids...)) >= len(want) }
}

func TestVerificationSessions(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: verificationEnv()})
	t.Cleanup(func() { p.noDeaths(t) })

	t.Run("completed and failed paths, reports, events at the endpoint", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		key := p.newKey(t, "acct_vpaths", false)
		_, secret := p.createEndpoint(t, key, rx.URL()+"/hooks", verificationTypes...)
		c := vs{t, p, key}

		done := c.create(sessionBody("jane@example.com", nil))
		id := str(done.Body["id"])
		if done.Body["status"] != "created" || !strings.HasPrefix(str(done.Body["client_secret"]), id+"_secret_") ||
			done.Body["report"] != nil || done.Body["livemode"] != false || done.Body["webhook_url"] != nil {
			t.Fatalf("created: %s", done.Raw)
		}
		c.walk(id, "pending", "processing")
		res := c.advance(id, map[string]any{"status": "completed", "outcomes": map[string]string{"credit": "failed"}})
		reportID := str(res.Body["report"])
		if res.Status != 200 || res.Body["status"] != "completed" || !strings.HasPrefix(reportID, "vr_") {
			t.Fatalf("completed: %d %s", res.Status, res.Raw)
		}
		rep := call(t, "GET", p.GatewayURL+"/v1/verification_reports/"+reportID, key, nil)
		prods := sub(rep.Body, "products")
		if rep.Status != 200 || rep.Body["object"] != "verification_report" || rep.Body["verification_session"] != id ||
			len(prods) != 3 || sub(prods, "credit")["status"] != "failed" || sub(prods, "income")["status"] != "passed" {
			t.Fatalf("report: %d %s", rep.Status, rep.Raw)
		}

		failed := str(c.create(sessionBody("jane@example.com", nil)).Body["id"])
		c.walk(failed, "pending", "processing")
		res = c.advance(failed, map[string]any{"status": "failed", "last_error": map[string]string{"code": "document_unverified", "product": "identity"}})
		le := sub(res.Body, "last_error")
		if res.Status != 200 || res.Body["status"] != "failed" || le["code"] != "document_unverified" || le["product"] != "identity" ||
			res.Body["report"] != nil {
			t.Fatalf("failed: %d %s", res.Status, res.Raw)
		}
		wantErr(t, call(t, "GET", p.GatewayURL+"/v1/verification_reports/vr_"+strings.TrimPrefix(failed, "vs_"), key, nil), 404, "resource_missing", "id")
		wantErr(t, c.advance(failed, map[string]any{"status": "pending"}), 400, "invalid_state", "")

		wantDone := []string{"verification_session.created", "verification_session.pending", "verification_session.processing",
			"verification_report.created", "verification_session.completed"}
		wantFailed := []string{"verification_session.created", "verification_session.pending", "verification_session.processing",
			"verification_session.failed"}
		reqs := rx.WaitUntil(t, "/hooks", deliveryWait, "both sessions' events", func(r []receiver.Request) bool {
			return hasSequence(wantDone, id, reportID)(r) && hasSequence(wantFailed, failed)(r)
		})
		if got := sequence(reqs, id, reportID); !slices.Equal(got, wantDone) {
			t.Fatalf("completed session's events %v\nwant %v", got, wantDone)
		}
		if got := sequence(reqs, failed); !slices.Equal(got, wantFailed) {
			t.Fatalf("failed session's events %v\nwant %v", got, wantFailed)
		}
		for _, q := range about(reqs, "", id) {
			if err := verifier(t, secret).Verify(q.Header, q.Body); err != nil {
				t.Fatalf("%s: %v", q.Event().Type, err)
			}
			if strings.Contains(string(q.Body), "_secret_") {
				t.Fatalf("an event carries the client secret: %s", q.Body)
			}
		}
		ev := about(reqs, "verification_session.completed", id)[0].Event()
		if ev.Data.Object["report"] != reportID || ev.Data.Object["status"] != "completed" {
			t.Fatalf("completed event object: %v", ev.Data.Object)
		}
		rev := about(reqs, "verification_report.created", reportID)[0].Event()
		if rev.Data.Object["verification_session"] != id {
			t.Fatalf("report event object: %v", rev.Data.Object)
		}
	})

	t.Run("webhook_url replaces the endpoints for its session", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		// Each event fails once at the override URL: retried as endpoint deliveries are.
		rx.ScriptPerEvent("/override", receiver.Fail(1, 503), receiver.OK())
		key := p.newKey(t, "acct_voverride", false)
		_, endpointSecret := p.createEndpoint(t, key, rx.URL()+"/endpoint", "*")
		c := vs{t, p, key}

		res := c.create(sessionBody("over@example.com", map[string]any{"webhook_url": rx.URL() + "/override"}))
		id, whsec := str(res.Body["id"]), str(res.Body["webhook_secret"])
		if res.Body["webhook_url"] != rx.URL()+"/override" || !strings.HasPrefix(whsec, "whsec_") {
			t.Fatalf("created: %s", res.Raw)
		}
		if got := c.get(id); str(got.Body["webhook_secret"]) != whsec {
			t.Fatalf("retrieve does not show the webhook_secret: %s", got.Raw)
		}
		c.walk(id, "pending", "processing", "completed")
		reportID := "vr_" + strings.TrimPrefix(id, "vs_")
		if r := call(t, "POST", p.GatewayURL+"/v1/verification_sessions/"+id+"/redact", key, nil); r.Status != 200 {
			t.Fatalf("redact: %d %s", r.Status, r.Raw)
		}
		// A session without a webhook_url, created after: its events reach the endpoint, so
		// by then the endpoint would have had the first session's too had they gone there.
		control := str(c.create(sessionBody("ctl@example.com", nil)).Body["id"])
		c.walk(control, "pending")

		want := []string{"verification_session.created", "verification_session.pending", "verification_session.processing",
			"verification_report.created", "verification_session.completed", "verification_session.redacted"}
		reqs := rx.WaitUntil(t, "/override", deliveryWait, "the session's events, each answered", func(r []receiver.Request) bool {
			answered := 0
			for _, q := range r {
				if q.Succeeded() {
					answered++
				}
			}
			return hasSequence(want, id, reportID)(r) && answered >= len(want)
		})
		if got := sequence(reqs, id, reportID); !slices.Equal(got, want) {
			t.Fatalf("events at the override URL %v\nwant %v", got, want)
		}
		for _, q := range reqs {
			if err := verifier(t, whsec).Verify(q.Header, q.Body); err != nil {
				t.Fatalf("%s at the override URL does not verify with the session's webhook_secret: %v", q.Event().Type, err)
			}
			if err := verifier(t, endpointSecret).Verify(q.Header, q.Body); !errors.Is(err, receiver.ErrNoMatchingSignature) {
				t.Fatalf("an override delivery verifies with the endpoint's secret: %v", err)
			}
			if strings.Contains(string(q.Body), whsec) || strings.Contains(string(q.Body), `"destination"`) {
				t.Fatalf("the delivery shows its secret or destination: %s", q.Body)
			}
		}
		if len(reqs) < 2*len(want) {
			t.Fatalf("%d requests for %d events, each failing once first: not retried", len(reqs), len(want))
		}
		ep := rx.WaitUntil(t, "/endpoint", deliveryWait, "the control session's events", hasAbout("verification_session.pending", control, 1))
		if got := about(ep, "", id); len(got) > 0 || len(about(ep, "", reportID)) > 0 {
			t.Fatalf("the endpoint got %d events of the session with a webhook_url", len(got))
		}
		// The event's delivery is to no endpoint, retried: 503 then 200.
		e := p.waitEvent(t, key, "verification_session.completed", id, deliveryWait)
		d := p.waitDelivery(t, key, str(e["id"]), "", deliveryWait, "succeeded", statusIs("succeeded"))
		if d["webhook_endpoint"] != nil || !slices.Equal(attemptStatuses(d), []int{200, 503}) {
			t.Fatalf("override delivery: %v", d)
		}
		if _, shown := e["destination"]; shown || strings.Contains(fmt.Sprint(e), whsec) {
			t.Fatalf("GET /v1/events shows the destination: %v", e)
		}
	})

	t.Run("cancel in each state", func(t *testing.T) {
		t.Parallel()
		c := vs{t, p, p.newKey(t, "acct_vcancel", false)}
		paths := [][]string{{}, {"pending"}, {"pending", "processing"}, {"pending", "processing", "failed"}, {"expired"},
			{"pending", "processing", "completed"}}
		for _, path := range paths {
			from := "created"
			if len(path) > 0 {
				from = path[len(path)-1]
			}
			id := str(c.create(sessionBody("c@example.com", nil)).Body["id"])
			c.walk(id, path...)
			res := c.cancel(id, map[string]any{"cancellation_reason": "requested_by_applicant"})
			if from == "completed" {
				wantErr(t, res, 400, "invalid_state", "")
				if got := c.get(id); got.Body["status"] != "completed" {
					t.Fatalf("a refused cancel changed the session: %s", got.Raw)
				}
				continue
			}
			if res.Status != 200 || res.Body["status"] != "canceled" || res.Body["cancellation_reason"] != "requested_by_applicant" || res.Body["object"] != "verification_session" {
				t.Fatalf("cancel from %s: %d %s", from, res.Status, res.Raw)
			}
			if (from == "failed" || from == "expired") && sub(res.Body, "last_error") == nil {
				t.Fatalf("cancel erased the %s session's last_error: %s", from, res.Raw)
			}
			again := c.cancel(id, map[string]any{"cancellation_reason": "other"})
			if again.Status != 200 || again.Body["cancellation_reason"] != "requested_by_applicant" {
				t.Fatalf("cancel of a canceled session: %d %s", again.Status, again.Raw)
			}
		}
		wantErr(t, c.cancel(str(c.create(sessionBody("c@example.com", nil)).Body["id"]), map[string]any{"cancellation_reason": "bored"}),
			400, "parameter_invalid", "cancellation_reason")
	})

	t.Run("redaction", func(t *testing.T) {
		t.Parallel()
		c := vs{t, p, p.newKey(t, "acct_vredact", false)}
		id := str(c.create(sessionBody("red@example.com", nil)).Body["id"])
		wantErr(t, call(t, "POST", p.GatewayURL+"/v1/verification_sessions/"+id+"/redact", c.key, nil), 400, "invalid_state", "")
		c.walk(id, "pending", "processing")
		c.advance(id, map[string]any{"status": "completed", "outcomes": map[string]string{"income": "failed"}})
		res := call(t, "POST", p.GatewayURL+"/v1/verification_sessions/"+id+"/redact", c.key, nil)
		a := sub(res.Body, "applicant")
		if res.Status != 200 || a["email"] != "[redacted]" || a["first_name"] != "[redacted]" || sub(a, "address")["line1"] != "[redacted]" ||
			len(sub(res.Body, "metadata")) != 0 || sub(res.Body, "redaction")["status"] != "redacted" {
			t.Fatalf("redacted: %d %s", res.Status, res.Raw)
		}
		rep := call(t, "GET", p.GatewayURL+"/v1/verification_reports/"+str(res.Body["report"]), c.key, nil)
		if reasons, _ := sub(sub(rep.Body, "products"), "income")["reasons"].([]any); len(reasons) != 1 || reasons[0] != "[redacted]" {
			t.Fatalf("report after redaction: %s", rep.Raw)
		}
		if again := call(t, "POST", p.GatewayURL+"/v1/verification_sessions/"+id+"/redact", c.key, nil); string(again.Raw) != string(res.Raw) {
			t.Fatalf("redacting again changed the session:\n%s\n%s", again.Raw, res.Raw)
		}
	})

	t.Run("list filters and pagination", func(t *testing.T) {
		t.Parallel()
		c := vs{t, p, p.newKey(t, "acct_vlist", false)}
		var ids []string
		for i := range 7 {
			ids = append(ids, str(c.create(sessionBody(fmt.Sprintf("l%d@example.com", i%2), nil)).Body["id"]))
		}
		slices.Reverse(ids) // newest first
		for _, i := range []int{0, 3, 4} {
			c.walk(ids[i], "pending")
		}
		base := p.GatewayURL + "/v1/verification_sessions"
		listIDs := func(q string) []string {
			var out []string
			for _, o := range listAll(t, c.key, base+q) {
				out = append(out, str(o["id"]))
				if _, shown := o["client_secret"]; shown {
					t.Fatalf("a list item shows the client secret: %v", o)
				}
			}
			return out
		}
		// ids[0] is the newest; l0@ are the sessions created at even i, i.e. ids 6,4,2,0 reversed.
		for q, want := range map[string][]string{
			"":                                  ids,
			"?status=pending":                   {ids[0], ids[3], ids[4]},
			"?applicant_email=L0%40Example.com": {ids[0], ids[2], ids[4], ids[6]},
			"?status=pending&applicant_email=l0@example.com": {ids[0], ids[4]},
		} {
			if got := listIDs(q); !slices.Equal(got, want) {
				t.Errorf("%s: %v\nwant %v", q, got, want)
			}
		}
		page := func(q string) ([]string, bool) {
			res := call(t, "GET", base+q, c.key, nil)
			if res.Status != 200 {
				t.Fatalf("GET %s: %d %s", q, res.Status, res.Raw)
			}
			var out []string
			for _, o := range res.Body["data"].([]any) {
				out = append(out, str(o.(map[string]any)["id"]))
			}
			return out, res.Body["has_more"] == true
		}
		f1, m1 := page("?limit=3")
		f2, m2 := page("?limit=3&starting_after=" + f1[2])
		f3, m3 := page("?limit=3&starting_after=" + f2[2])
		if !slices.Equal(f1, ids[:3]) || !m1 || !slices.Equal(f2, ids[3:6]) || !m2 || !slices.Equal(f3, ids[6:]) || m3 {
			t.Fatalf("forward: %v %v | %v %v | %v %v", f1, m1, f2, m2, f3, m3)
		}
		b1, bm1 := page("?limit=3&ending_before=" + f3[0])
		b2, bm2 := page("?limit=3&ending_before=" + b1[0])
		if !slices.Equal(b1, ids[3:6]) || !bm1 || !slices.Equal(b2, ids[:3]) || bm2 {
			t.Fatalf("backward: %v %v | %v %v", b1, bm1, b2, bm2)
		}
		pf, pm := page("?limit=1&status=pending&starting_after=" + ids[0])
		pb, pbm := page("?limit=1&status=pending&ending_before=" + ids[4])
		if !slices.Equal(pf, ids[3:4]) || !pm || !slices.Equal(pb, ids[3:4]) || !pbm {
			t.Fatalf("filtered pages: %v %v | %v %v", pf, pm, pb, pbm)
		}
		wantErr(t, call(t, "GET", base+"?status=done", c.key, nil), 400, "parameter_invalid", "status")
		wantErr(t, call(t, "GET", base+"?applicant_email="+url.QueryEscape("not an email"), c.key, nil), 400, "parameter_invalid", "applicant_email")
		wantErr(t, call(t, "GET", base+"?limit=0", c.key, nil), 400, "parameter_invalid", "limit")
	})

	t.Run("accounts, modes and errors", func(t *testing.T) {
		t.Parallel()
		c := vs{t, p, p.newKey(t, "acct_vscope", false)}
		live := vs{t, p, p.newKey(t, "acct_vscope", true)}
		other := vs{t, p, p.newKey(t, "acct_vscopeother", false)}
		id := str(c.create(sessionBody("s@example.com", nil)).Body["id"])
		for _, k := range []vs{live, other} {
			wantErr(t, k.get(id), 404, "resource_missing", "id")
			wantErr(t, k.cancel(id, nil), 404, "resource_missing", "id")
		}
		// Live: no test helper, and sessions stay created (no verification provider).
		lid := str(live.create(sessionBody("s@example.com", nil)).Body["id"])
		wantErr(t, live.advance(lid, map[string]any{"status": "pending"}), 404, "route_missing", "")
		if got := live.get(lid); got.Body["status"] != "created" || got.Body["livemode"] != true {
			t.Fatalf("live session: %s", got.Raw)
		}
		bad := sessionBody("s@example.com", nil)
		bad["applicant"].(map[string]any)["address"].(map[string]any)["country"] = "XX"
		wantErr(t, call(t, "POST", p.GatewayURL+"/v1/verification_sessions", c.key, bad), 400, "parameter_invalid", "applicant.address.country")
		bad = sessionBody("s@example.com", map[string]any{"colour": "red"})
		wantErr(t, call(t, "POST", p.GatewayURL+"/v1/verification_sessions", c.key, bad), 400, "parameter_unknown", "colour")
		bad = sessionBody("s@example.com", map[string]any{"products": []string{"credit", "credit"}})
		wantErr(t, call(t, "POST", p.GatewayURL+"/v1/verification_sessions", c.key, bad), 400, "parameter_invalid", "products[1]")
		bad = sessionBody("s@example.com", map[string]any{"webhook_url": "http://example.com/hook"})
		wantErr(t, call(t, "POST", p.GatewayURL+"/v1/verification_sessions", c.key, bad), 400, "url_not_https", "webhook_url")
	})
}

// TestVerificationExpiry: with VERIFICATION_SESSION_TTL=3s sessions still created or pending
// expire at expires_at (the asynq task), say why, and raise verification_session.expired.
func TestVerificationExpiry(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: verificationEnv("VERIFICATION_SESSION_TTL", "3s", "VERIFICATION_EXPIRY_SWEEP_INTERVAL", "1s")})
	t.Cleanup(func() { p.noDeaths(t) })
	rx := receiver.New(t)
	key := p.newKey(t, "acct_vexpiry", false)
	p.createEndpoint(t, key, rx.URL()+"/hooks", "verification_session.expired", "verification_session.processing")
	c := vs{t, p, key}

	created := c.create(sessionBody("e@example.com", nil))
	if exp, cr := created.Body["expires_at"].(float64), created.Body["created"].(float64); exp-cr != 3 {
		t.Fatalf("expires_at %v - created %v: want the configured 3 s", exp, cr)
	}
	pending := str(c.create(sessionBody("e@example.com", nil)).Body["id"])
	c.walk(pending, "pending")
	processing := str(c.create(sessionBody("e@example.com", nil)).Body["id"])
	c.walk(processing, "pending", "processing")
	id := str(created.Body["id"])

	reqs := rx.WaitUntil(t, "/hooks", deliveryWait, "two expired events", func(r []receiver.Request) bool {
		return len(about(r, "verification_session.expired", id)) > 0 && len(about(r, "verification_session.expired", pending)) > 0
	})
	for _, sid := range []string{id, pending} {
		q := about(reqs, "verification_session.expired", sid)[0]
		e := q.Event()
		expiresAt, _ := e.Data.Object["expires_at"].(float64)
		// The task runs at expires_at (rounded up to a second); the delivery follows at once.
		if lag := q.Time.Sub(time.Unix(int64(expiresAt), 0)); lag < 0 || lag > 30*time.Second {
			t.Errorf("%s expired %s after its expires_at", sid, lag)
		}
		if sub(e.Data.Object, "last_error")["code"] != "abandoned" {
			t.Errorf("expired event object: %v", e.Data.Object)
		}
		if got := c.get(sid); got.Body["status"] != "expired" {
			t.Errorf("%s: %s", sid, got.Raw)
		}
	}
	if got := c.get(pending); len(got.Body["attempts"].([]any)) != 1 || sub(got.Body["attempts"].([]any)[0].(map[string]any), "last_error")["code"] != "abandoned" {
		t.Fatalf("the pending session's attempt: %s", got.Raw)
	}
	if got := c.get(processing); got.Body["status"] != "processing" {
		t.Fatalf("a processing session: %s", got.Raw)
	}
	if n := len(about(rx.Requests("/hooks"), "verification_session.expired", processing)); n != 0 {
		t.Fatalf("the processing session raised expired")
	}
	// Expired, then canceled: the reason it expired stays.
	res := c.cancel(id, nil)
	if res.Status != 200 || res.Body["status"] != "canceled" || sub(res.Body, "last_error")["code"] != "abandoned" {
		t.Fatalf("cancel after expiry: %d %s", res.Status, res.Raw)
	}
}
