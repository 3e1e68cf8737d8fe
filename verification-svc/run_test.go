package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/servicetest"

	"rentalplatform/verification-svc/internal/tasks"
)

// Component tests: the whole service through run(), on a free port, against the embedded
// store and Redis, with requests signed the way the gateway signs them. Nothing consumes the
// events queue here: the tests read what was published from it.

// TestComponent runs what every service behind the gateway must do through run(): boot,
// health, identity, errors, configuration.
func TestComponent(t *testing.T) {
	servicetest.Component(t, run, map[string]string{"REDIS_URL": testkit.Redis(t)})
}

type instance struct {
	env map[string]string
	api *servicetest.Client
}

// start runs the service on its own store and Redis; env adds or overrides variables.
func start(t *testing.T, env ...string) *instance {
	t.Helper()
	vars := servicetest.Env(t)
	maps.Copy(vars, map[string]string{"REDIS_URL": testkit.Redis(t), "OUTBOX_RELAY_INTERVAL": "100ms"})
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	p := servicetest.Start(t, run, vars, "http")
	return &instance{env: vars, api: servicetest.NewClient(t, p.URL("http"))}
}

const fullBody = `{
	"applicant": {"first_name": "Jane", "last_name": "Doe", "email": "Jane.Doe@example.com", "date_of_birth": "1990-02-28",
		"phone": "+4915112345678",
		"address": {"line1": "1 Main St", "line2": "Apt 2", "city": "Berlin", "state": "BE", "postal_code": "10115", "country": "de"}},
	"products": ["identity", "income", "credit"],
	"redirect_url": "https://example.com/done",
	"webhook_url": "https://hooks.example.com/vs",
	"metadata": {"unit": "4B"}
}`

const minimalBody = `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"]}`

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// wantFields checks that the body has exactly these top-level fields.
func wantFields(t *testing.T, body map[string]any, fields ...string) {
	t.Helper()
	got := slices.Sorted(maps.Keys(body))
	slices.Sort(fields)
	if !slices.Equal(got, fields) {
		t.Fatalf("fields %v\nwant  %v", got, fields)
	}
}

var sessionFields = []string{"id", "object", "status", "applicant", "products", "redirect_url", "webhook_url", "report", "metadata",
	"expires_at", "created", "livemode", "cancellation_reason", "last_error", "attempts", "redaction"}

func TestCreateRetrieveList(t *testing.T) {
	t.Parallel()
	s := start(t)
	before := time.Now().Unix()
	res := s.api.Do("POST", "/v1/verification_sessions", fullBody).WantOK(t)
	b := res.Body
	id := res.Str("id")
	wantFields(t, b, append(slices.Clone(sessionFields), "client_secret", "webhook_secret")...)
	if !strings.HasPrefix(id, "vs_") || b["object"] != "verification_session" || b["status"] != "created" || b["livemode"] != false ||
		b["report"] != nil || b["last_error"] != nil || b["redaction"] != nil || b["cancellation_reason"] != nil ||
		len(b["attempts"].([]any)) != 0 || b["redirect_url"] != "https://example.com/done" || b["webhook_url"] != "https://hooks.example.com/vs" {
		t.Fatalf("created: %s", res.Raw)
	}
	secret := res.Str("client_secret")
	if !strings.HasPrefix(secret, id+"_secret_") || len(secret)-len(id+"_secret_") < 32 || !strings.HasPrefix(res.Str("webhook_secret"), "whsec_") {
		t.Fatalf("secrets %q %q", secret, res.Str("webhook_secret"))
	}
	created, expires := int64(b["created"].(float64)), int64(b["expires_at"].(float64))
	if created < before || expires-created != 7*24*3600 {
		t.Fatalf("created %d, expires_at %d: want created + 7 days", created, expires)
	}
	app := obj(b["applicant"])
	addr := obj(app["address"])
	if app["email"] != "Jane.Doe@example.com" || app["date_of_birth"] != "1990-02-28" || app["phone"] != "+4915112345678" ||
		addr["country"] != "DE" || addr["line2"] != "Apt 2" || addr["state"] != "BE" || fmt.Sprint(b["products"]) != "[identity income credit]" ||
		obj(b["metadata"])["unit"] != "4B" || res.Header.Get("Request-Id") == "" {
		t.Fatalf("created: %s", res.Raw)
	}

	// Retrieve shows the secrets too; a list never does.
	got := s.api.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t)
	if got.Str("client_secret") != secret || got.Str("webhook_secret") != res.Str("webhook_secret") || string(got.Raw) != string(res.Raw) {
		t.Fatalf("retrieve:\n%s\nwant\n%s", got.Raw, res.Raw)
	}
	min := s.api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	ma := obj(min.Body["applicant"])
	if ma["date_of_birth"] != nil || ma["phone"] != nil || ma["address"] != nil || min.Body["webhook_url"] != nil ||
		min.Body["redirect_url"] != nil || min.Str("webhook_secret") != "" || len(obj(min.Body["metadata"])) != 0 {
		t.Fatalf("minimal: %s", min.Raw)
	}
	list := s.api.Do("GET", "/v1/verification_sessions", "").WantOK(t)
	data := list.Body["data"].([]any)
	if list.Body["object"] != "list" || list.Body["url"] != "/v1/verification_sessions" || list.Body["has_more"] != false || len(data) != 2 {
		t.Fatalf("list: %s", list.Raw)
	}
	for _, d := range data {
		wantFields(t, obj(d), sessionFields...)
	}
	if obj(data[0])["id"] != min.Str("id") {
		t.Fatalf("list is not newest first: %s", list.Raw)
	}

	// Another account, or the other mode, sees nothing of it.
	other := s.api.For(t, "acct_someoneelse", false)
	otherMode := s.api.For(t, s.api.Account, true)
	for _, c := range []*servicetest.Client{other, otherMode} {
		c.Do("GET", "/v1/verification_sessions/"+id, "").WantError(t, 404, "invalid_request_error", "resource_missing", "id")
		c.Do("POST", "/v1/verification_sessions/"+id+"/cancel", "").WantError(t, 404, "invalid_request_error", "resource_missing", "id")
		if l := c.Do("GET", "/v1/verification_sessions", "").WantOK(t); len(l.Body["data"].([]any)) != 0 {
			t.Fatalf("another owner lists %s", l.Raw)
		}
	}
	s.api.Do("GET", "/v1/verification_sessions/vs_nope", "").WantError(t, 404, "invalid_request_error", "resource_missing", "id")
}

// TestBadRequests: the error envelope and the dotted parameter through HTTP (every rule is
// table-tested in the domain).
func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := start(t)
	id := s.api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t).Str("id")
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		code, param              string
	}{
		{"unknown top-level", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"],"color":"red"}`, 400, "parameter_unknown", "color"},
		{"unknown in applicant", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com","middle_name":"X"},"products":["credit"]}`, 400, "parameter_unknown", "applicant.middle_name"},
		{"unknown in address", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com","address":{"line1":"a","city":"b","postal_code":"c","country":"DE","zip":"1"}},"products":["credit"]}`, 400, "parameter_unknown", "applicant.address.zip"},
		{"missing applicant", "POST", "/v1/verification_sessions", `{"products":["credit"]}`, 400, "parameter_missing", "applicant"},
		{"applicant not an object", "POST", "/v1/verification_sessions", `{"applicant":"Jane","products":["credit"]}`, 400, "parameter_invalid", "applicant"},
		{"bad email", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"nope"},"products":["credit"]}`, 400, "parameter_invalid", "applicant.email"},
		{"bad country", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com","address":{"line1":"a","city":"b","postal_code":"c","country":"XX"}},"products":["credit"]}`, 400, "parameter_invalid", "applicant.address.country"},
		{"products not an array", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":"credit"}`, 400, "parameter_invalid", "products"},
		{"product not a string", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit",7]}`, 400, "parameter_invalid", "products[1]"},
		{"products null", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":null}`, 400, "parameter_missing", "products"},
		{"webhook_url http", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"],"webhook_url":"http://hooks.example.com"}`, 400, "url_not_https", "webhook_url"},
		{"webhook_url fragment", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"],"webhook_url":"https://hooks.example.com/#x"}`, 400, "parameter_invalid", "webhook_url"},
		{"redirect_url space", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"],"redirect_url":"https://shop.example.com/a b"}`, 400, "parameter_invalid", "redirect_url"},
		{"first_name NUL", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J\u0000","last_name":"D","email":"j@example.com"},"products":["credit"]}`, 400, "parameter_invalid", "applicant.first_name"},
		{"city C1", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com","address":{"line1":"a","city":"b\u0085","postal_code":"c","country":"DE"}},"products":["credit"]}`, 400, "parameter_invalid", "applicant.address.city"},
		{"metadata value NUL", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"],"metadata":{"k":"\u0000"}}`, 400, "parameter_invalid", "metadata[k]"},
		{"webhook_url private", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"],"webhook_url":"https://192.168.1.1/hook"}`, 400, "url_not_allowed", "webhook_url"},
		{"metadata value not text", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com"},"products":["credit"],"metadata":{"n":1}}`, 400, "parameter_invalid", "metadata[n]"},
		{"key twice", "POST", "/v1/verification_sessions", `{"applicant":{"first_name":"J","last_name":"D","email":"j@example.com","email":"k@example.com"},"products":["credit"]}`, 400, "parameter_duplicate", "applicant.email"},
		{"not JSON", "POST", "/v1/verification_sessions", `{"applicant":`, 400, "body_invalid_json", ""},
		{"cancel: bad reason", "POST", "/v1/verification_sessions/" + id + "/cancel", `{"cancellation_reason":"bored"}`, 400, "parameter_invalid", "cancellation_reason"},
		{"cancel: unknown", "POST", "/v1/verification_sessions/" + id + "/cancel", `{"reason":"duplicate"}`, 400, "parameter_unknown", "reason"},
		{"redact: unknown", "POST", "/v1/verification_sessions/" + id + "/redact", `{"fields":["email"]}`, 400, "parameter_unknown", "fields"},
		{"advance: no status", "POST", "/v1/test_helpers/verification_sessions/" + id + "/advance", `{}`, 400, "parameter_missing", "status"},
		{"advance: bad status", "POST", "/v1/test_helpers/verification_sessions/" + id + "/advance", `{"status":"done"}`, 400, "parameter_invalid", "status"},
		{"advance: bad outcome", "POST", "/v1/test_helpers/verification_sessions/" + id + "/advance", `{"status":"completed","outcomes":{"credit":"meh"}}`, 400, "parameter_invalid", "outcomes[credit]"},
		{"advance: bad code", "POST", "/v1/test_helpers/verification_sessions/" + id + "/advance", `{"status":"failed","last_error":{"code":"bad_luck"}}`, 400, "parameter_invalid", "last_error.code"},
		{"advance: bad edge", "POST", "/v1/test_helpers/verification_sessions/" + id + "/advance", `{"status":"completed"}`, 400, "invalid_state", ""},
		{"list: bad status", "GET", "/v1/verification_sessions?status=done", "", 400, "parameter_invalid", "status"},
		{"list: bad email", "GET", "/v1/verification_sessions?applicant_email=nope", "", 400, "parameter_invalid", "applicant_email"},
		{"list: empty filter", "GET", "/v1/verification_sessions?status=", "", 400, "parameter_invalid", "status"},
		{"list: unknown", "GET", "/v1/verification_sessions?email=a@example.com", "", 400, "parameter_unknown", "email"},
		{"list: limit", "GET", "/v1/verification_sessions?limit=101", "", 400, "parameter_invalid", "limit"},
		{"list: cursor kind", "GET", "/v1/verification_sessions?starting_after=we_01kaj2c8v6f3q9ysq7m2d0w1xz", "", 400, "parameter_invalid", "starting_after"},
		{"report: missing", "GET", "/v1/verification_reports/vr_01kaj2c8v6f3q9ysq7m2d0w1xz", "", 404, "resource_missing", "id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s.api.For(t, s.api.Account, false).Do(tt.method, tt.path, tt.body).WantError(t, tt.status, "invalid_request_error", tt.code, tt.param)
		})
	}
	// Nothing of the refused requests was stored or changed.
	if l := s.api.Do("GET", "/v1/verification_sessions", "").WantOK(t); len(l.Body["data"].([]any)) != 1 || obj(l.Body["data"].([]any)[0])["status"] != "created" {
		t.Fatalf("after refused requests: %s", l.Raw)
	}
}

// published returns the events the service put on the events queue about object id (nothing
// consumes it in these tests), oldest first.
func (s *instance) published(t *testing.T, id string) []events.Event {
	t.Helper()
	return servicetest.PublishedAbout(t, s.env["REDIS_URL"], id, "verification_session")
}

// waitPublished polls the queue until n events about id are there.
func (s *instance) waitPublished(t *testing.T, id string, n int) []events.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := s.published(t, id)
		if len(evs) >= n || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func advance(t *testing.T, api *servicetest.Client, id, body string) servicetest.Response {
	t.Helper()
	return api.Do("POST", "/v1/test_helpers/verification_sessions/"+id+"/advance", body)
}

// TestCompletedPath: created → pending → processing → completed with a failed product, the
// report, and the events (with the session's webhook_url as their destination, never shown).
func TestCompletedPath(t *testing.T) {
	t.Parallel()
	s := start(t)
	res := s.api.Do("POST", "/v1/verification_sessions", fullBody).WantOK(t)
	id, whsec := res.Str("id"), res.Str("webhook_secret")
	advance(t, s.api, id, `{"status":"pending"}`).WantOK(t)
	p := advance(t, s.api, id, `{"status":"processing"}`).WantOK(t)
	if p.Str("status") != "processing" || p.Str("client_secret") != "" {
		t.Fatalf("processing: %s", p.Raw)
	}
	done := advance(t, s.api, id, `{"status":"completed","outcomes":{"credit":"failed"}}`).WantOK(t)
	reportID := done.Str("report")
	at := done.Body["attempts"].([]any)
	if done.Str("status") != "completed" || reportID != "vr_"+strings.TrimPrefix(id, "vs_") || len(at) != 1 ||
		obj(at[0])["outcome"] != "completed" || obj(at[0])["ended_at"] == nil || done.Body["last_error"] != nil {
		t.Fatalf("completed: %s", done.Raw)
	}
	r := s.api.Do("GET", "/v1/verification_reports/"+reportID, "").WantOK(t)
	wantFields(t, r.Body, "id", "object", "verification_session", "livemode", "created", "products")
	prods := obj(r.Body["products"])
	if r.Str("object") != "verification_report" || r.Str("verification_session") != id || len(prods) != 3 ||
		obj(prods["identity"])["status"] != "passed" || len(obj(prods["identity"])["reasons"].([]any)) != 0 ||
		obj(prods["credit"])["status"] != "failed" || len(obj(prods["credit"])["reasons"].([]any)) != 1 {
		t.Fatalf("report: %s", r.Raw)
	}
	if !strings.HasPrefix(string(r.Raw), `{"id":"vr_`) || strings.Index(string(r.Raw), `"identity"`) > strings.Index(string(r.Raw), `"credit"`) {
		t.Fatalf("report products are not in the session's order: %s", r.Raw)
	}
	s.api.For(t, "acct_other", false).Do("GET", "/v1/verification_reports/"+reportID, "").
		WantError(t, 404, "invalid_request_error", "resource_missing", "id")

	// Completed: cancel and further moves are refused, unchanged.
	s.api.Do("POST", "/v1/verification_sessions/"+id+"/cancel", "").WantError(t, 400, "invalid_request_error", "invalid_state", "")
	advance(t, s.api, id, `{"status":"failed"}`).WantError(t, 400, "invalid_request_error", "invalid_state", "")

	evs := s.waitPublished(t, id, 5)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
		if ev.Destination == nil || ev.Destination.URL != "https://hooks.example.com/vs" || ev.Destination.Secret != whsec {
			t.Errorf("%s: destination %+v", ev.Type, ev.Destination)
		}
		if strings.Contains(string(ev.Data.Object), "_secret_") || strings.Contains(string(ev.Data.Object), "whsec_") {
			t.Errorf("%s carries a secret: %s", ev.Type, ev.Data.Object)
		}
		rendered, _ := json.Marshal(events.Render(ev, ev.APIVersion))
		if strings.Contains(string(rendered), "hooks.example.com/vs\",\"secret") || strings.Contains(string(rendered), whsec) {
			t.Errorf("the rendered event shows its destination: %s", rendered)
		}
	}
	want := []string{"verification_session.created", "verification_session.pending", "verification_session.processing",
		"verification_report.created", "verification_session.completed"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v\nwant %v", types, want)
	}
	// A change's answer is the object its event shows (the rendering they share), and the
	// report's event shows the report as the API does; none carries previous_attributes.
	for i, answer := range map[int][]byte{2: p.Raw, 3: r.Raw, 4: done.Raw} {
		if got := string(evs[i].Data.Object); got != string(answer) {
			t.Errorf("%s shows\n%s\nthe API answered\n%s", evs[i].Type, got, answer)
		}
	}
	for _, ev := range evs {
		if ev.Data.PreviousAttributes != nil || ev.Request.ID == nil {
			t.Errorf("%s: previous_attributes %s, request %+v", ev.Type, ev.Data.PreviousAttributes, ev.Request)
		}
	}
}

// TestFailedCancelRedact: a failed session says why; cancel keeps that; redaction.
func TestFailedCancelRedact(t *testing.T) {
	t.Parallel()
	s := start(t)
	id := s.api.Do("POST", "/v1/verification_sessions", fullBody).WantOK(t).Str("id")
	s.api.Do("POST", "/v1/verification_sessions/"+id+"/redact", "").WantError(t, 400, "invalid_request_error", "invalid_state", "")
	advance(t, s.api, id, `{"status":"pending"}`).WantOK(t)
	advance(t, s.api, id, `{"status":"processing"}`).WantOK(t)
	advance(t, s.api, id, `{"status":"failed","last_error":{"code":"income_insufficient"}}`).WantOK(t)
	c := s.api.Do("POST", "/v1/verification_sessions/"+id+"/cancel", `{"cancellation_reason":"requested_by_applicant"}`).WantOK(t)
	le := obj(c.Body["last_error"])
	at := c.Body["attempts"].([]any)
	if c.Str("status") != "canceled" || c.Str("cancellation_reason") != "requested_by_applicant" || le["code"] != "income_insufficient" ||
		le["product"] != "income" || le["reason"] == "" || len(at) != 1 || obj(at[0])["outcome"] != "failed" || obj(obj(at[0])["last_error"])["code"] != "income_insufficient" {
		t.Fatalf("canceled after failing: %s", c.Raw)
	}
	// Canceled again: returned unchanged.
	again := s.api.Do("POST", "/v1/verification_sessions/"+id+"/cancel", `{"cancellation_reason":"other"}`).WantOK(t)
	if string(again.Raw) != string(c.Raw) {
		t.Fatalf("second cancel changed the session:\n%s\n%s", again.Raw, c.Raw)
	}
	red := s.api.Do("POST", "/v1/verification_sessions/"+id+"/redact", "").WantOK(t)
	a := obj(red.Body["applicant"])
	ad := obj(a["address"])
	rd := obj(red.Body["redaction"])
	for _, v := range []any{a["first_name"], a["last_name"], a["email"], a["date_of_birth"], a["phone"], ad["line1"], ad["line2"], ad["city"], ad["state"], ad["postal_code"], ad["country"]} {
		if v != "[redacted]" {
			t.Fatalf("not redacted: %s", red.Raw)
		}
	}
	if len(obj(red.Body["metadata"])) != 0 || rd["status"] != "redacted" || rd["redacted_at"] == nil || red.Str("status") != "canceled" {
		t.Fatalf("redacted: %s", red.Raw)
	}
	if again := s.api.Do("POST", "/v1/verification_sessions/"+id+"/redact", "").WantOK(t); string(again.Raw) != string(red.Raw) {
		t.Fatalf("second redaction changed the session")
	}
	if l := s.api.Do("GET", "/v1/verification_sessions?applicant_email=jane.doe@example.com", "").WantOK(t); len(l.Body["data"].([]any)) != 0 {
		t.Fatalf("a redacted session is still found by its applicant's email: %s", l.Raw)
	}
	var types []string
	for _, ev := range s.waitPublished(t, id, 6) {
		types = append(types, ev.Type)
	}
	if want := "verification_session.created verification_session.pending verification_session.processing verification_session.failed verification_session.canceled verification_session.redacted"; strings.Join(types, " ") != want {
		t.Fatalf("events %v", types)
	}
}

// TestCancelInEachState: cancel from every status but completed, through the API.
func TestCancelInEachState(t *testing.T) {
	t.Parallel()
	s := start(t)
	paths := map[string][]string{
		"created": nil, "pending": {"pending"}, "processing": {"pending", "processing"}, "failed": {"pending", "processing", "failed"},
		"expired": {"expired"}, "completed": {"pending", "processing", "completed"},
	}
	for _, from := range slices.Sorted(maps.Keys(paths)) {
		t.Run(from, func(t *testing.T) {
			api := s.api.For(t, s.api.Account, false)
			id := api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t).Str("id")
			for _, st := range paths[from] {
				advance(t, api, id, `{"status":"`+st+`"}`).WantOK(t)
			}
			res := api.Do("POST", "/v1/verification_sessions/"+id+"/cancel", `{"cancellation_reason":"duplicate"}`)
			if from == "completed" {
				res.WantError(t, 400, "invalid_request_error", "invalid_state", "")
				if got := api.Do("GET", "/v1/verification_sessions/"+id, "").Str("status"); got != "completed" {
					t.Fatalf("status after a refused cancel: %s", got)
				}
				return
			}
			res.WantOK(t)
			if res.Str("status") != "canceled" || res.Str("cancellation_reason") != "duplicate" {
				t.Fatalf("cancel from %s: %s", from, res.Raw)
			}
			if (from == "failed" || from == "expired") && res.Body["last_error"] == nil {
				t.Fatalf("cancel erased the last_error of a %s session: %s", from, res.Raw)
			}
		})
	}
}

// The test helper does not exist in live mode; live sessions stay created (no provider).
func TestLiveMode(t *testing.T) {
	t.Parallel()
	s := start(t)
	live := s.api.For(t, s.api.Account, true)
	res := live.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	if res.Body["livemode"] != true || res.Str("status") != "created" {
		t.Fatalf("live session: %s", res.Raw)
	}
	advance(t, live, res.Str("id"), `{"status":"pending"}`).WantError(t, 404, "invalid_request_error", "route_missing", "")
	advance(t, live, res.Str("id"), `{"nonsense":1}`).WantError(t, 404, "invalid_request_error", "route_missing", "")
}

// TestListFiltersAndPaging through the API.
func TestListFiltersAndPaging(t *testing.T) {
	t.Parallel()
	s := start(t)
	var ids []string // newest first once reversed
	for i := range 5 {
		email := fmt.Sprintf("p%d@example.com", i%2)
		body := strings.Replace(minimalBody, "j@example.com", email, 1)
		ids = append(ids, s.api.Do("POST", "/v1/verification_sessions", body).WantOK(t).Str("id"))
	}
	slices.Reverse(ids) // ids[0] is the newest
	advance(t, s.api, ids[1], `{"status":"pending"}`).WantOK(t)
	advance(t, s.api, ids[3], `{"status":"pending"}`).WantOK(t)
	list := func(q string) ([]string, bool) {
		t.Helper()
		r := s.api.Do("GET", "/v1/verification_sessions"+q, "").WantOK(t)
		var out []string
		for _, d := range r.Body["data"].([]any) {
			out = append(out, obj(d)["id"].(string))
		}
		return out, r.Body["has_more"].(bool)
	}
	for q, want := range map[string][]string{
		"?status=pending":                                {ids[1], ids[3]},
		"?status=created":                                {ids[0], ids[2], ids[4]},
		"?applicant_email=P1@Example.com":                {ids[1], ids[3]},
		"?status=created&applicant_email=p0@example.com": {ids[0], ids[2], ids[4]},
		"?status=pending&applicant_email=p0@example.com": nil,
	} {
		if got, more := list(q); !slices.Equal(got, want) || more {
			t.Errorf("%s: %v %v; want %v", q, got, more, want)
		}
	}
	p1, more := list("?limit=2")
	p2, more2 := list("?limit=2&starting_after=" + p1[1])
	p3, more3 := list("?limit=2&starting_after=" + p2[1])
	if !slices.Equal(p1, ids[:2]) || !more || !slices.Equal(p2, ids[2:4]) || !more2 || !slices.Equal(p3, ids[4:]) || more3 {
		t.Fatalf("forward: %v %v / %v %v / %v %v", p1, more, p2, more2, p3, more3)
	}
	b1, bmore := list("?limit=2&ending_before=" + p3[0])
	b2, bmore2 := list("?limit=2&ending_before=" + b1[0])
	if !slices.Equal(b1, ids[2:4]) || !bmore || !slices.Equal(b2, ids[:2]) || bmore2 {
		t.Fatalf("backward: %v %v / %v %v", b1, bmore, b2, bmore2)
	}
	if got, _ := list("?limit=1&status=created&starting_after=" + ids[0]); !slices.Equal(got, ids[2:3]) {
		t.Fatalf("filtered page after a cursor: %v", got)
	}
}

// TestExpiry: with a short lifetime the expiry task expires a session at its expires_at; a
// session whose task was lost is expired by the sweep.
func TestExpiry(t *testing.T) {
	t.Parallel()
	s := start(t, "VERIFICATION_SESSION_TTL", "2s", "VERIFICATION_EXPIRY_SWEEP_INTERVAL", "500ms")
	waitStatus := func(id, want string, within time.Duration) servicetest.Response {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			r := s.api.Do("GET", "/v1/verification_sessions/"+id, "").WantOK(t)
			if r.Str("status") == want {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s after %s; want %s", id, r.Str("status"), within, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	created := s.api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	pending := s.api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	advance(t, s.api, pending.Str("id"), `{"status":"pending"}`).WantOK(t)
	processing := s.api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	advance(t, s.api, processing.Str("id"), `{"status":"pending"}`).WantOK(t)
	advance(t, s.api, processing.Str("id"), `{"status":"processing"}`).WantOK(t)
	if exp, cr := created.Body["expires_at"].(float64), created.Body["created"].(float64); exp-cr != 2 {
		t.Fatalf("expires_at - created = %v; want the configured 2 s", exp-cr)
	}

	e := waitStatus(created.Str("id"), "expired", 15*time.Second)
	if le := obj(e.Body["last_error"]); le["code"] != "abandoned" || le["product"] != nil {
		t.Fatalf("expired: %s", e.Raw)
	}
	p := waitStatus(pending.Str("id"), "expired", 15*time.Second)
	if at := p.Body["attempts"].([]any); len(at) != 1 || obj(at[0])["outcome"] != "expired" {
		t.Fatalf("expired while pending: %s", p.Raw)
	}
	if evs := s.waitPublished(t, created.Str("id"), 2); len(evs) != 2 || evs[1].Type != "verification_session.expired" || evs[1].Request.ID != nil {
		t.Fatalf("events %+v", evs)
	}
	time.Sleep(time.Second)
	if got := s.api.Do("GET", "/v1/verification_sessions/"+processing.Str("id"), "").Str("status"); got != "processing" {
		t.Fatalf("a processing session became %s", got)
	}

	// Lost task: removed from Redis before it runs; the sweep expires the session anyway.
	lost := s.api.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t).Str("id")
	opt, _ := asynqx.RedisOpt(s.env["REDIS_URL"])
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	// The expiry is queued in the background after the create answers: wait until it is there.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := insp.DeleteTask(tasks.QueueVerification, tasks.Expire{Session: lost}.ID())
		if err == nil {
			break
		}
		if !errors.Is(err, asynq.ErrTaskNotFound) || time.Now().After(deadline) {
			t.Fatalf("deleting the expiry task: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitStatus(lost, "expired", 20*time.Second)
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"INTERNAL_AUTH_SECRET":               "short",
		"REDIS_URL":                          "http://nowhere",
		"VERIFICATION_SESSION_TTL":           "500ms",
		"VERIFICATION_EXPIRY_SWEEP_INTERVAL": "0s",
		"VERIFICATION_EXPIRY_CONCURRENCY":    "0",
		"VERIFICATION_WEBHOOK_ALLOW_PRIVATE": "perhaps",
		"OUTBOX_RELAY_INTERVAL":              "-1s",
	}
	servicetest.RefusesConfig(t, run, env)
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(func(k string) string {
		if k == "INTERNAL_AUTH_SECRET" {
			return servicetest.Secret
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RedisURL != "redis://127.0.0.1:6379/0" || cfg.SessionTTL != 7*24*time.Hour || cfg.ExpirySweep != 30*time.Second ||
		cfg.ExpiryConcurrency != 20 || cfg.WebhookAllowPrivate || cfg.OutboxRelayInterval != time.Second {
		t.Fatalf("defaults %+v", cfg)
	}
}

// A create the gateway answered 502 (the service died mid-request) is retried with the same
// Idempotency-Key and reaches the service again: it answers with the session the first stored,
// in the mode and account of the key only, and stores nothing more.
func TestCreateRetriedWithItsIdempotencyKey(t *testing.T) {
	s := start(t)
	k := s.api.WithKey("idem-session")
	first := k.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	again := k.Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	if again.Str("id") != first.Str("id") || again.Str("status") != first.Str("status") {
		t.Fatalf("retry answered %s, first %s", again.Raw, first.Raw)
	}
	live := k.Mode(true).Do("POST", "/v1/verification_sessions", minimalBody).WantOK(t)
	if live.Str("id") == first.Str("id") {
		t.Fatal("the same key in live mode got the test-mode session")
	}
	if l := s.api.Do("GET", "/v1/verification_sessions", "").WantOK(t); len(l.Body["data"].([]any)) != 1 {
		t.Fatalf("test mode holds %s", l.Raw)
	}
}
