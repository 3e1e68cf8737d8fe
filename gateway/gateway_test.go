package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/servicetest"
)

const (
	testAdminToken = "admin-token-for-the-tests-0123456789"
	testSecret     = "internal-auth-secret-for-the-tests-0123456789"
)

// stack is a running gateway in front of four fake services.
type stack struct {
	proc     *servicetest.Process
	services map[string]*fakeService
	public   string
	admin    string
	metrics  string // the metrics listener's /metrics
	redis    string // REDIS_URL of the gateway
	mongoURI string // MONGODB_URI and MONGODB_DATABASE of the gateway
	mongoDB  string
}

// startStack starts the gateway with env on top of the defaults (rate limits off); upstream URLs
// not set in env point at fresh fake services.
func startStack(t testing.TB, env map[string]string) *stack {
	t.Helper()
	mongo := testkit.Mongo(t)
	full := map[string]string{
		"GATEWAY_ADDR":         "127.0.0.1:0",
		"ADMIN_ADDR":           "127.0.0.1:0",
		"ADMIN_TOKEN":          testAdminToken,
		"MONGODB_URI":          mongo.URI,
		"MONGODB_DATABASE":     mongo.Database,
		"REDIS_URL":            testkit.Redis(t),
		"INTERNAL_AUTH_SECRET": testSecret,
		"SHUTDOWN_TIMEOUT":     "5s",
		// Limits are off unless a test is about them: the tests fire requests far faster
		// than the default 25 a second of test mode.
		"GATEWAY_RATE_LIMIT_TEST":    "0",
		"GATEWAY_RATE_LIMIT_LIVE":    "0",
		"GATEWAY_AUTH_FAILURE_LIMIT": "0",
	}
	s := &stack{services: map[string]*fakeService{}}
	for _, svc := range []struct{ name, env string }{
		{"verification", "VERIFICATION_URL"}, {"collections", "COLLECTIONS_URL"},
		{"payments", "PAYMENTS_URL"}, {"webhooks", "WEBHOOKS_URL"},
	} {
		if _, ok := env[svc.env]; ok {
			continue
		}
		f := newFakeService(t, svc.name, []byte(testSecret))
		s.services[svc.name] = f
		full[svc.env] = f.URL()
	}
	for k, v := range env {
		full[k] = v
	}
	s.redis, s.mongoURI, s.mongoDB = full["REDIS_URL"], full["MONGODB_URI"], full["MONGODB_DATABASE"]
	s.proc = servicetest.Start(t, run, full, "public", "admin", "metrics")
	s.public, s.admin, s.metrics = s.proc.URL("public"), s.proc.URL("admin"), s.proc.URL("metrics")+"/metrics"
	return s
}

// response is a finished request.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %d body %q: %v", r.status, r.body, err)
	}
}

type errorBody struct {
	Error struct {
		Type      string `json:"type"`
		Code      string `json:"code"`
		Message   string `json:"message"`
		Param     string `json:"param"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

func (r response) errBody(t testing.TB) errorBody {
	t.Helper()
	var e errorBody
	r.json(t, &e)
	return e
}

// expectError checks status, type and code of an error envelope.
func (r response) expectError(t testing.TB, status int, typ, code string) errorBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	e := r.errBody(t)
	if e.Error.Type != typ || e.Error.Code != code {
		t.Fatalf("error = %s/%s, want %s/%s; body %s", e.Error.Type, e.Error.Code, typ, code, r.body)
	}
	return e
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// do sends a request and checks what every answer of the gateway must have: a Request-Id
// that is a req_ id, equal to the error body's request_id when there is one.
func do(t testing.TB, method, url string, body io.Reader, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: b}
	rid := resp.Header.Get("Request-Id")
	if !ids.Valid(ids.Request, rid) {
		t.Fatalf("%s %s: Request-Id = %q, want a req_ id (status %d)", method, url, rid, resp.StatusCode)
	}
	// /readyz answers 503 with its own report, not an error envelope.
	if resp.StatusCode >= 400 && method != http.MethodHead && !strings.HasSuffix(url, "/readyz") {
		e := r.errBody(t)
		if e.Error.RequestID != rid {
			t.Fatalf("%s %s: body request_id %q != Request-Id %q", method, url, e.Error.RequestID, rid)
		}
	}
	return r
}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

func jsonHeaders(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
}

type apiKey struct {
	ID       string  `json:"id"`
	Object   string  `json:"object"`
	Secret   *string `json:"secret"`
	Account  string  `json:"account"`
	Livemode bool    `json:"livemode"`
	Created  int64   `json:"created"`
	LastUsed *int64  `json:"last_used"`
	Revoked  bool    `json:"revoked"`
}

func (s *stack) createKey(t testing.TB, account string, live bool) apiKey {
	t.Helper()
	r := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(fmt.Sprintf(`{"account":%q,"livemode":%v}`, account, live)),
		jsonHeaders(testAdminToken))
	if r.status != http.StatusCreated {
		t.Fatalf("create key: %d %s", r.status, r.body)
	}
	var k apiKey
	r.json(t, &k)
	return k
}

func (s *stack) revokeKey(t testing.TB, id string) apiKey {
	t.Helper()
	r := do(t, "POST", s.admin+"/admin/api_keys/"+id+"/revoke", nil, bearer(testAdminToken))
	if r.status != http.StatusOK {
		t.Fatalf("revoke key: %d %s", r.status, r.body)
	}
	var k apiKey
	r.json(t, &k)
	return k
}

func TestGateway(t *testing.T) {
	s := startStack(t, map[string]string{"UPSTREAM_TIMEOUT": "1s", "UPLOAD_BODY_LIMIT": "4MiB"})
	testKey := s.createKey(t, "acct_alpha", false)
	liveKey := s.createKey(t, "acct_alpha", true)

	t.Run("health", func(t *testing.T) {
		r := do(t, "GET", s.public+"/healthz", nil, nil)
		if r.status != 200 {
			t.Fatalf("/healthz = %d %s", r.status, r.body)
		}
		r = do(t, "GET", s.public+"/readyz", nil, nil)
		var ready struct {
			Status string            `json:"status"`
			Checks map[string]string `json:"checks"`
		}
		r.json(t, &ready)
		if r.status != 200 || ready.Status != "ready" {
			t.Fatalf("/readyz = %d %s", r.status, r.body)
		}
		for _, c := range []string{"mongodb", "redis", "verification", "collections", "payments", "webhooks"} {
			if ready.Checks[c] != "ok" {
				t.Errorf("/readyz check %s = %q, want ok", c, ready.Checks[c])
			}
		}
	})

	t.Run("admin token", func(t *testing.T) {
		for name, h := range map[string]map[string]string{
			"none":         nil,
			"wrong":        bearer("admin-token-for-the-tests-012345678X"),
			"prefix":       bearer(testAdminToken[:10]),
			"basic":        {"Authorization": "Basic " + testAdminToken},
			"empty bearer": {"Authorization": "Bearer "},
		} {
			t.Run(name, func(t *testing.T) {
				for _, path := range []string{"/admin/api_keys", "/admin/nope"} {
					r := do(t, "GET", s.admin+path, nil, h)
					r.expectError(t, 401, "authentication_error", "admin_token_invalid")
				}
			})
		}
		r := do(t, "GET", s.admin+"/admin/nope", nil, bearer(testAdminToken))
		r.expectError(t, 404, "invalid_request_error", "route_missing")
		// The admin API is not on the public listener, and API keys do not open it.
		r = do(t, "GET", s.public+"/admin/api_keys", nil, bearer(*testKey.Secret))
		r.expectError(t, 404, "invalid_request_error", "route_missing")
		r = do(t, "GET", s.admin+"/admin/api_keys", nil, bearer(*testKey.Secret))
		r.expectError(t, 401, "authentication_error", "admin_token_invalid")
	})

	t.Run("admin keys", func(t *testing.T) {
		k := s.createKey(t, "acct_admin1", false)
		if !strings.HasPrefix(k.ID, "key_") || k.Object != "api_key" || k.Secret == nil ||
			!strings.HasPrefix(*k.Secret, "sk_test_") || len(*k.Secret) != len("sk_test_")+43 ||
			k.Account != "acct_admin1" || k.Livemode || k.Revoked || k.LastUsed != nil ||
			k.Created < time.Now().Add(-time.Minute).Unix() {
			t.Fatalf("created key = %+v", k)
		}
		live := s.createKey(t, "acct_admin1", true)
		if !strings.HasPrefix(*live.Secret, "sk_live_") || !live.Livemode {
			t.Fatalf("live key = %+v", live)
		}
		// The create response has exactly the documented fields, last_used null.
		r := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(`{"account":"acct_admin2"}`), jsonHeaders(testAdminToken))
		var raw map[string]any
		r.json(t, &raw)
		if len(raw) != 12 || raw["last_used"] != nil || raw["livemode"] != false || raw["type"] != "secret" ||
			raw["permissions"] != nil || raw["rate_limit"] != nil || raw["expires"] != nil {
			t.Fatalf("create response = %s", r.body)
		}

		for _, tc := range []struct {
			body, code, param string
			status            int
		}{
			{`{}`, "parameter_missing", "account", 400},
			{`{"livemode":true}`, "parameter_missing", "account", 400},
			{`{"account":"acct-1"}`, "parameter_invalid", "account", 400},
			{`{"account":"acct_"}`, "parameter_invalid", "account", 400},
			{`{"account":"acct_1","livemode":"yes"}`, "parameter_invalid", "livemode", 400},
			{`{"account":"acct_1","name":"x"}`, "parameter_unknown", "name", 400},
			{`{"account":"acct_1","secret":"sk_test_short"}`, "parameter_invalid", "secret", 400},
			{`{"account":"acct_1",`, "body_invalid_json", "", 400},
		} {
			r := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(tc.body), jsonHeaders(testAdminToken))
			e := r.expectError(t, tc.status, "invalid_request_error", tc.code)
			if e.Error.Param != tc.param {
				t.Errorf("%s: param = %q, want %q", tc.body, e.Error.Param, tc.param)
			}
		}
		r = do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(`account=acct_1`),
			map[string]string{"Authorization": "Bearer " + testAdminToken, "Content-Type": "application/x-www-form-urlencoded"})
		r.expectError(t, 415, "invalid_request_error", "unsupported_media_type")

		// Importing a known secret (seeding a development key) works once.
		imported := "sk_test_" + strings.Repeat("d", 43)
		body := fmt.Sprintf(`{"account":"acct_dev","secret":%q}`, imported)
		r = do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(body), jsonHeaders(testAdminToken))
		if r.status != 201 {
			t.Fatalf("import: %d %s", r.status, r.body)
		}
		r = do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(body), jsonHeaders(testAdminToken))
		r.expectError(t, 409, "invalid_request_error", "resource_already_exists")
		if r := do(t, "GET", s.public+"/v1/events", nil, bearer(imported)); r.status != 200 {
			t.Fatalf("imported key: %d %s", r.status, r.body)
		}

		// Lists: newest first, filtered by account, no secrets, paginated both ways.
		var made []string
		for i := 0; i < 5; i++ {
			made = append([]string{s.createKey(t, "acct_lister", i%2 == 0).ID}, made...)
		}
		var list struct {
			Object  string           `json:"object"`
			Data    []map[string]any `json:"data"`
			HasMore bool             `json:"has_more"`
			URL     string           `json:"url"`
		}
		r = do(t, "GET", s.admin+"/admin/api_keys?account=acct_lister&limit=3", nil, bearer(testAdminToken))
		r.json(t, &list)
		if r.status != 200 || list.Object != "list" || list.URL != "/admin/api_keys" || !list.HasMore || len(list.Data) != 3 {
			t.Fatalf("list = %d %s", r.status, r.body)
		}
		for i, k := range list.Data {
			if k["id"] != made[i] || k["account"] != "acct_lister" {
				t.Fatalf("list[%d] = %v, want %s", i, k, made[i])
			}
			if _, ok := k["secret"]; ok {
				t.Fatalf("list shows a secret: %v", k)
			}
		}
		r = do(t, "GET", s.admin+"/admin/api_keys?account=acct_lister&limit=3&starting_after="+made[2], nil, bearer(testAdminToken))
		r.json(t, &list)
		if len(list.Data) != 2 || list.HasMore || list.Data[0]["id"] != made[3] {
			t.Fatalf("second page = %s", r.body)
		}
		r = do(t, "GET", s.admin+"/admin/api_keys?account=acct_lister&limit=3&ending_before="+made[3], nil, bearer(testAdminToken))
		r.json(t, &list)
		if len(list.Data) != 3 || list.HasMore || list.Data[0]["id"] != made[0] {
			t.Fatalf("backward page = %s", r.body)
		}
		r = do(t, "GET", s.admin+"/admin/api_keys?limit=100", nil, bearer(testAdminToken))
		r.json(t, &list)
		if len(list.Data) < 10 {
			t.Fatalf("list of all accounts = %d keys", len(list.Data))
		}
		for _, tc := range []struct{ query, code, param string }{
			{"limit=0", "parameter_invalid", "limit"},
			{"limit=101", "parameter_invalid", "limit"},
			{"account=nope", "parameter_invalid", "account"},
			{"acount=acct_1", "parameter_unknown", "acount"},
			{"starting_after=key_00000000000000000000000000", "resource_missing", "starting_after"},
			{"account=acct_other&starting_after=" + made[0], "resource_missing", "starting_after"},
		} {
			r := do(t, "GET", s.admin+"/admin/api_keys?"+tc.query, nil, bearer(testAdminToken))
			e := r.expectError(t, 400, "invalid_request_error", tc.code)
			if e.Error.Param != tc.param {
				t.Errorf("%s: param = %q, want %q", tc.query, e.Error.Param, tc.param)
			}
		}

		// Revoke: once, twice (same answer), unknown.
		rk := s.revokeKey(t, k.ID)
		if !rk.Revoked || rk.Secret != nil || rk.ID != k.ID {
			t.Fatalf("revoked key = %+v", rk)
		}
		if again := s.revokeKey(t, k.ID); !again.Revoked {
			t.Fatalf("second revoke = %+v", again)
		}
		for _, id := range []string{"key_00000000000000000000000000", "nope"} {
			r = do(t, "POST", s.admin+"/admin/api_keys/"+id+"/revoke", nil, bearer(testAdminToken))
			e := r.expectError(t, 404, "invalid_request_error", "resource_missing")
			if e.Error.Param != "id" {
				t.Errorf("revoke %s: param = %q", id, e.Error.Param)
			}
		}
		r = do(t, "POST", s.admin+"/admin/api_keys/"+k.ID+"/revoke", strings.NewReader(`{"at":1}`), jsonHeaders(testAdminToken))
		r.expectError(t, 400, "invalid_request_error", "parameter_unknown")
		r = do(t, "DELETE", s.admin+"/admin/api_keys", nil, bearer(testAdminToken))
		r.expectError(t, 405, "invalid_request_error", "method_not_allowed")
	})

	t.Run("401 matrix", func(t *testing.T) {
		revoked := s.createKey(t, "acct_revoked", false)
		if r := do(t, "GET", s.public+"/v1/events", nil, bearer(*revoked.Secret)); r.status != 200 {
			t.Fatalf("before revoke: %d %s", r.status, r.body)
		}
		s.revokeKey(t, revoked.ID)
		unknownTest := "sk_test_" + strings.Repeat("A", 43)
		cases := map[string]map[string]string{
			"no header":        nil,
			"basic":            {"Authorization": "Basic " + *testKey.Secret},
			"basic user:pass":  {"Authorization": "Basic c2tfdGVzdF94eXo6"},
			"bearer empty":     {"Authorization": "Bearer "},
			"bearer only":      {"Authorization": "Bearer"},
			"no scheme":        {"Authorization": *testKey.Secret},
			"malformed":        bearer("sk_test_abc"),
			"wrong prefix":     bearer("pk_test_" + strings.Repeat("A", 43)),
			"unknown test key": bearer(unknownTest),
			"unknown live key": bearer("sk_live_" + strings.Repeat("A", 43)),
			"revoked":          bearer(*revoked.Secret),
			"two keys":         bearer(*testKey.Secret + " " + *liveKey.Secret),
			"mode swapped":     bearer("sk_live_" + strings.TrimPrefix(*testKey.Secret, "sk_test_")),
		}
		var first []byte
		for name, h := range cases {
			t.Run(name, func(t *testing.T) {
				// Routed, unrouted and non-/v1 paths all answer 401 first.
				for _, path := range []string{"/v1/events", "/v1/nope", "/nope", "/"} {
					r := do(t, "GET", s.public+path, nil, h)
					e := r.expectError(t, 401, "authentication_error", "api_key_invalid")
					if r.header.Get("WWW-Authenticate") == "" {
						t.Errorf("%s: no WWW-Authenticate", path)
					}
					// Same body for every failure, apart from the request id.
					b := bytes.ReplaceAll(r.body, []byte(e.Error.RequestID), []byte("req_X"))
					if first == nil {
						first = b
					} else if !bytes.Equal(b, first) {
						t.Errorf("401 body differs:\n%s\n%s", b, first)
					}
				}
			})
		}
		// Revocation took effect at once (the revoke was served by this replica) and a POST
		// with a body gets the same answer.
		r := do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(`{"url":"https://x"}`), jsonHeaders(*revoked.Secret))
		r.expectError(t, 401, "authentication_error", "api_key_invalid")
	})

	t.Run("routing", func(t *testing.T) {
		for _, tc := range []struct{ path, service string }{
			{"/v1/verification_sessions", "verification"},
			{"/v1/verification_sessions/vs_1", "verification"},
			{"/v1/verification_reports/vr_1", "verification"},
			{"/v1/collection_cases", "collections"},
			{"/v1/collection_cases/ref/CC-1", "collections"},
			{"/v1/payment_requests/preq_1", "payments"},
			{"/v1/payment_agreements", "payments"},
			{"/v1/webhook_endpoints/we_1", "webhooks"},
			{"/v1/events", "webhooks"},
			{"/v1/webhook_deliveries", "webhooks"},
			{"/v1/test_helpers/verification_sessions/vs_1/approve", "verification"},
			{"/v1/test_helpers/collection_cases/dc_1/advance", "collections"},
			{"/v1/test_helpers/payment_requests/preq_1/fail", "payments"},
			{"/v1/test_helpers/webhook_endpoints/we_1/ping", "webhooks"},
		} {
			for _, method := range []string{"GET", "POST", "DELETE"} {
				var body io.Reader
				if method == "POST" {
					body = strings.NewReader(`{"a":1}`)
				}
				h := jsonHeaders(*testKey.Secret)
				h["Accept"] = "application/json"
				h["Last-Event-ID"] = "1764380000000-0" // the event stream's resume point
				// One key per request: a key reused on another path is refused (idempotency).
				h["Idempotency-Key"] = "idem-" + method + tc.path
				// Forged identity and a header the gateway does not forward.
				h["X-Rental-Account"] = "acct_evil"
				h["X-Rental-Livemode"] = "true"
				h["X-Request-Id"] = "req_forged"
				h["X-Rental-Idempotency-Key"] = "forged"
				h["X-Rental-Timestamp"] = "1"
				h["X-Rental-Signature"] = "v1=00"
				h["X-Forged"] = "yes"
				r := do(t, method, s.public+tc.path+"?limit=3&expand[]=data.x&q=a%20b", body, h)
				if r.status != 200 {
					t.Fatalf("%s %s: %d %s", method, tc.path, r.status, r.body)
				}
				var e echo
				r.json(t, &e)
				want := echo{Service: tc.service, Method: method, Path: tc.path, Query: "limit=3&expand[]=data.x&q=a%20b",
					Account: "acct_alpha", Livemode: false, RequestID: r.header.Get("Request-Id"), IdempotencyKey: "idem-" + method + tc.path,
					Accept: "application/json", ContentType: "application/json", LastEventID: "1764380000000-0"}
				if method == "POST" {
					want.BodyLen = 7
					want.BodySHA256 = sha(`{"a":1}`)
				} else {
					want.BodySHA256 = sha("")
				}
				e.Traceparent = ""
				if e != want {
					t.Fatalf("%s %s reached the service as\n%+v\nwant\n%+v", method, tc.path, e, want)
				}
				if r.header.Get("X-Upstream") != tc.service || r.header.Get("Cache-Control") != "no-store" ||
					!strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
					t.Fatalf("response headers not passed through: %v", r.header)
				}
			}
		}
	})

	t.Run("livemode follows the key", func(t *testing.T) {
		for _, k := range []apiKey{testKey, liveKey} {
			r := do(t, "GET", s.public+"/v1/events", nil, bearer(*k.Secret))
			var e echo
			r.json(t, &e)
			if r.status != 200 || e.Livemode != k.Livemode || e.Account != "acct_alpha" || e.IdempotencyKey != "" {
				t.Fatalf("key livemode=%v: %d %s", k.Livemode, r.status, r.body)
			}
		}
	})

	t.Run("trace context is forwarded", func(t *testing.T) {
		const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		h := bearer(*testKey.Secret)
		h["traceparent"] = "00-" + traceID + "-00f067aa0ba902b7-01"
		r := do(t, "GET", s.public+"/v1/events", nil, h)
		var e echo
		r.json(t, &e)
		if !strings.Contains(e.Traceparent, traceID) || strings.Contains(e.Traceparent, "00f067aa0ba902b7") {
			t.Fatalf("service got traceparent %q, want a child span of trace %s", e.Traceparent, traceID)
		}
	})

	t.Run("404 and 405", func(t *testing.T) {
		key := *testKey.Secret
		for _, path := range []string{"/v1/nope", "/v1/eventsfoo", "/v1", "/v1/", "/", "/favicon.ico",
			"/v1/test_helpers/charges/ch_1", "/v1/events/%2e%2e/x", "/v1/events/evt%5F1", "/v1//events"} {
			r := do(t, "GET", s.public+path, nil, bearer(key))
			r.expectError(t, 404, "invalid_request_error", "route_missing")
		}
		for _, method := range []string{"PUT", "PATCH", "OPTIONS"} {
			r := do(t, method, s.public+"/v1/webhook_endpoints/we_1", strings.NewReader(`{}`), jsonHeaders(key))
			r.expectError(t, 405, "invalid_request_error", "method_not_allowed")
			if r.header.Get("Allow") != "GET, HEAD, POST, DELETE" {
				t.Errorf("%s: Allow = %q", method, r.header.Get("Allow"))
			}
		}
		// The service's own envelopes pass through untouched, with the gateway's request id.
		r := do(t, "GET", s.public+"/v1/events/missing", nil, bearer(key))
		if e := r.expectError(t, 404, "invalid_request_error", "resource_missing"); e.Error.Message != "from the fake resource_missing" {
			t.Fatalf("service 404 rewritten: %s", r.body)
		}
		r = do(t, "POST", s.public+"/v1/events/not_allowed", nil, bearer(key))
		r.expectError(t, 405, "invalid_request_error", "method_not_allowed")
		if r.header.Get("Allow") != "GET" {
			t.Errorf("service Allow header = %q", r.header.Get("Allow"))
		}
		r = do(t, "GET", s.public+"/v1/events/unavailable", nil, bearer(key))
		r.expectError(t, 503, "api_error", "service_unavailable")
		if r.header.Get("Retry-After") != "7" {
			t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
		}
	})

	t.Run("body limits", func(t *testing.T) {
		key := *testKey.Secret
		limit := 1 << 20
		ok := `{"pad":"` + strings.Repeat("x", limit-len(`{"pad":""}`)) + `"}`
		r := do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(ok), jsonHeaders(key))
		var e echo
		r.json(t, &e)
		if r.status != 200 || e.BodyLen != limit {
			t.Fatalf("1 MiB body: %d, service got %d bytes", r.status, e.BodyLen)
		}
		tooBig := ok[:len(ok)-2] + `x"}`
		r = do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader(tooBig), jsonHeaders(key))
		r.expectError(t, 413, "invalid_request_error", "body_too_large")
		// Without Content-Length (chunked) the limit holds while reading.
		r = do(t, "POST", s.public+"/v1/webhook_endpoints", io.MultiReader(strings.NewReader(tooBig)), jsonHeaders(key))
		r.expectError(t, 413, "invalid_request_error", "body_too_large")
		r = do(t, "POST", s.public+"/v1/webhook_endpoints", io.MultiReader(strings.NewReader(`{"small":true}`)), jsonHeaders(key))
		r.json(t, &e)
		if r.status != 200 || e.BodyLen != 14 {
			t.Fatalf("small chunked body: %d %s", r.status, r.body)
		}
		// The connection that carried the 413 keeps working.
		r = do(t, "GET", s.public+"/v1/events", nil, bearer(key))
		if r.status != 200 {
			t.Fatalf("after 413: %d", r.status)
		}
		h := jsonHeaders(key)
		h["Content-Encoding"] = "gzip"
		r = do(t, "POST", s.public+"/v1/webhook_endpoints", strings.NewReader("{}"), h)
		r.expectError(t, 415, "invalid_request_error", "content_encoding_unsupported")
	})

	t.Run("upload is streamed under its own limit", func(t *testing.T) {
		key := *testKey.Secret
		file := make([]byte, 3<<20) // over BODY_LIMIT, under UPLOAD_BODY_LIMIT (4 MiB)
		_, _ = rand.Read(file)
		body, ctype := multipartBody(t, file)

		svc := s.services["collections"]
		started := make(chan struct{})
		svc.mu.Lock()
		svc.uploadStarted = started
		svc.mu.Unlock()
		defer func() { svc.mu.Lock(); svc.uploadStarted = nil; svc.mu.Unlock() }()

		// Send half, wait until the service has seen the first MiB, then send the rest: a
		// gateway that buffered the whole body would never forward the first MiB.
		pr, pw := io.Pipe()
		go func() {
			half := len(body) / 2
			if _, err := pw.Write(body[:half]); err != nil {
				return
			}
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				pw.CloseWithError(fmt.Errorf("service saw nothing of the upload before the client finished"))
				return
			}
			_, _ = pw.Write(body[half:])
			pw.Close()
		}()
		req, err := http.NewRequest("POST", s.public+"/v1/collection_cases/dc_1/files", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", ctype)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e echo
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 200 {
			t.Fatalf("upload: %d %s", resp.StatusCode, b)
		}
		if e.BodyLen != len(body) || e.BodySHA256 != sha(string(body)) || e.ContentType != ctype || e.Service != "collections" {
			t.Fatalf("service got %d bytes (%s), want %d intact", e.BodyLen, e.ContentType, len(body))
		}

		// Chunked uploads stream too.
		r := do(t, "POST", s.public+"/v1/collection_cases/dc_1/files", io.MultiReader(bytes.NewReader(body)),
			map[string]string{"Authorization": "Bearer " + key, "Content-Type": ctype})
		r.json(t, &e)
		if r.status != 200 || e.BodyLen != len(body) || e.BodySHA256 != sha(string(body)) || !e.Chunked {
			t.Fatalf("chunked upload: %d, service got %d bytes chunked=%v", r.status, e.BodyLen, e.Chunked)
		}

		// Just over the limit and far over it (where the gateway stops reading and closes the
		// connection): the client gets the 413 either way, not a connection reset.
		for _, size := range []int{4 << 20, 24 << 20} {
			big, bigType := multipartBody(t, make([]byte, size))
			h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": bigType}
			r = do(t, "POST", s.public+"/v1/collection_cases/dc_1/files", bytes.NewReader(big), h)
			r.expectError(t, 413, "invalid_request_error", "body_too_large")
			r = do(t, "POST", s.public+"/v1/collection_cases/dc_1/files", io.MultiReader(bytes.NewReader(big)), h)
			r.expectError(t, 413, "invalid_request_error", "body_too_large")
			// Refused before the body is looked at, too.
			r = do(t, "POST", s.public+"/v1/collection_cases/dc_1/files", bytes.NewReader(big), map[string]string{"Content-Type": bigType})
			r.expectError(t, 401, "authentication_error", "api_key_invalid")
		}
		if r := do(t, "GET", s.public+"/v1/events", nil, bearer(key)); r.status != 200 {
			t.Fatalf("after the refused uploads: %d", r.status)
		}
		// The upload limit is only for the upload route.
		r = do(t, "POST", s.public+"/v1/collection_cases/dc_1", bytes.NewReader(body),
			map[string]string{"Authorization": "Bearer " + key, "Content-Type": ctype})
		r.expectError(t, 413, "invalid_request_error", "body_too_large")
	})

	t.Run("504 when the service is slow", func(t *testing.T) {
		start := time.Now()
		r := do(t, "GET", s.public+"/v1/events/sleep", nil, bearer(*testKey.Secret))
		r.expectError(t, 504, "api_error", "upstream_timeout")
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("504 took %v with UPSTREAM_TIMEOUT=1s", d)
		}
		r = do(t, "POST", s.public+"/v1/events/sleep", strings.NewReader("{}"), jsonHeaders(*testKey.Secret))
		r.expectError(t, 504, "api_error", "upstream_timeout")
	})

	t.Run("last_used is recorded", func(t *testing.T) {
		k := s.createKey(t, "acct_used", false)
		for i := 0; i < 3; i++ {
			do(t, "GET", s.public+"/v1/events", nil, bearer(*k.Secret))
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var list struct {
				Data []apiKey `json:"data"`
			}
			do(t, "GET", s.admin+"/admin/api_keys?account=acct_used", nil, bearer(testAdminToken)).json(t, &list)
			if len(list.Data) == 1 && list.Data[0].LastUsed != nil {
				if *list.Data[0].LastUsed < k.Created {
					t.Fatalf("last_used %d before created %d", *list.Data[0].LastUsed, k.Created)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("last_used still null: %+v", list.Data)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func TestGatewayUpstreamsDown(t *testing.T) {
	env := map[string]string{"UPSTREAM_TIMEOUT": "2s"}
	for _, k := range []string{"VERIFICATION_URL", "COLLECTIONS_URL", "PAYMENTS_URL", "WEBHOOKS_URL"} {
		env[k] = closedURL(t)
	}
	s := startStack(t, env)
	k := s.createKey(t, "acct_down", false)

	start := time.Now()
	for _, path := range []string{"/v1/events", "/v1/payment_requests", "/v1/collection_cases/dc_1/files"} {
		r := do(t, "GET", s.public+path, nil, bearer(*k.Secret))
		r.expectError(t, 502, "api_error", "upstream_unavailable")
		r = do(t, "POST", s.public+path, strings.NewReader(`{"x":1}`), jsonHeaders(*k.Secret))
		r.expectError(t, 502, "api_error", "upstream_unavailable")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refused connections took %v to report", d)
	}
	if r := do(t, "GET", s.public+"/healthz", nil, nil); r.status != 200 {
		t.Fatalf("/healthz = %d", r.status)
	}
	r := do(t, "GET", s.public+"/readyz", nil, nil)
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	r.json(t, &ready)
	// The services' routes answer 502, the rest of the gateway serves: degraded, still ready.
	if r.status != 200 || ready.Status != "degraded" || ready.Checks["mongodb"] != "ok" || ready.Checks["webhooks"] != "unavailable" {
		t.Fatalf("/readyz = %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "127.0.0.1") {
		t.Fatalf("/readyz shows internal addresses: %s", r.body)
	}
	// 401 still comes first: an unauthenticated caller learns nothing about the outage.
	r = do(t, "GET", s.public+"/v1/events", nil, nil)
	r.expectError(t, 401, "authentication_error", "api_key_invalid")
}

func TestConfigErrors(t *testing.T) {
	env := map[string]string{
		"ADMIN_TOKEN": "short", "INTERNAL_AUTH_SECRET": "also-short", "UPSTREAM_TIMEOUT": "soon",
		"BODY_LIMIT": "1MB", "REDIS_URL": "http://x", "LOG_LEVEL": "loud", "GATEWAY_RATE_LIMIT_TIMEOUT": "-1s",
	}
	var out bytes.Buffer
	err := run(context.Background(), func(k string) string { return env[k] }, &out)
	if err == nil {
		t.Fatal("run accepted a bad configuration")
	}
	for _, name := range []string{"ADMIN_TOKEN", "INTERNAL_AUTH_SECRET", "UPSTREAM_TIMEOUT", "BODY_LIMIT", "REDIS_URL", "LOG_LEVEL", "GATEWAY_RATE_LIMIT_TIMEOUT"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	err = run(context.Background(), func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "ADMIN_TOKEN is required") || !strings.Contains(err.Error(), "INTERNAL_AUTH_SECRET is required") {
		t.Fatalf("run with an empty environment = %v", err)
	}
}

func multipartBody(t testing.TB, file []byte) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.WriteField("document_type", "original_invoice"); err != nil {
		t.Fatal(err)
	}
	fw, err := w.CreateFormFile("file", "invoice.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(file); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
