package main

import (
	"strings"
	"testing"
	"time"
)

type restrictedKey struct {
	apiKey
	Type        string            `json:"type"`
	Permissions map[string]string `json:"permissions"`
	Expires     *int64            `json:"expires"`
	RateLimit   *int              `json:"rate_limit"`
}

func TestGatewayRestrictedKeys(t *testing.T) {
	s := startStack(t, nil)
	r := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(
		`{"account":"acct_rk","permissions":{"webhook_endpoints":"read","events":"write","payment_requests":"none"}}`), jsonHeaders(testAdminToken))
	if r.status != 201 {
		t.Fatalf("create restricted key: %d %s", r.status, r.body)
	}
	var rk restrictedKey
	r.json(t, &rk)
	if rk.Type != "restricted" || !strings.HasPrefix(*rk.Secret, "rk_test_") || rk.Permissions["webhook_endpoints"] != "read" ||
		rk.Permissions["collection_cases"] != "none" || len(rk.Permissions) != 6 {
		t.Fatalf("restricted key = %s", r.body)
	}
	live := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(`{"account":"acct_rk","livemode":true,"permissions":{}}`), jsonHeaders(testAdminToken))
	var lk restrictedKey
	live.json(t, &lk)
	if live.status != 201 || !strings.HasPrefix(*lk.Secret, "rk_live_") {
		t.Fatalf("live restricted key: %d %s", live.status, live.body)
	}

	for _, tc := range []struct {
		method, path string
		status       int
		resource     string // named in the 403
	}{
		{"GET", "/v1/webhook_endpoints", 200, ""},
		{"GET", "/v1/webhook_endpoints/we_1/deliveries", 200, ""},
		{"GET", "/v1/webhook_deliveries", 200, ""},
		{"POST", "/v1/webhook_endpoints", 403, "webhook_endpoints"},
		{"DELETE", "/v1/webhook_endpoints/we_1", 403, "webhook_endpoints"},
		{"POST", "/v1/webhook_deliveries/wd_1/retry", 403, "webhook_endpoints"},
		{"GET", "/v1/events", 200, ""},
		{"GET", "/v1/events/evt_1/deliveries", 200, ""},
		{"POST", "/v1/events/evt_1", 200, ""},
		{"GET", "/v1/payment_requests", 403, "payment_requests"},
		{"GET", "/v1/payment_agreements/pa_1", 403, "payment_agreements"},
		{"GET", "/v1/verification_reports/vr_1", 403, "verification_sessions"},
		{"POST", "/v1/test_helpers/verification_sessions/vs_1/approve", 403, "verification_sessions"},
		{"POST", "/v1/collection_cases", 403, "collection_cases"},
		{"GET", "/v1/charges", 404, ""},
	} {
		var body *strings.Reader
		if tc.method == "POST" {
			body = strings.NewReader(`{}`)
		} else {
			body = strings.NewReader("")
		}
		r := do(t, tc.method, s.public+tc.path, body, jsonHeaders(*rk.Secret))
		switch tc.status {
		case 403:
			e := r.expectError(t, 403, "permission_error", "permission_denied")
			if !strings.Contains(e.Error.Message, tc.resource) || !strings.Contains(e.Error.Message, rk.ID) {
				t.Fatalf("%s %s: message %q does not name %s and the key", tc.method, tc.path, e.Error.Message, tc.resource)
			}
		case 404:
			r.expectError(t, 404, "invalid_request_error", "route_missing")
		default:
			if r.status != tc.status {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, r.status, r.body)
			}
		}
	}
	// A key with no permissions at all may do nothing.
	do(t, "GET", s.public+"/v1/events", nil, bearer(*lk.Secret)).expectError(t, 403, "permission_error", "permission_denied")

	t.Run("admin validation", func(t *testing.T) {
		for _, tc := range []struct {
			path, body, param string
			status            int
		}{
			{"/admin/api_keys", `{"account":"acct_rk","permissions":{"charges":"read"}}`, "permissions[charges]", 400},
			{"/admin/api_keys", `{"account":"acct_rk","permissions":{"events":"all"}}`, "permissions[events]", 400},
			{"/admin/api_keys", `{"account":"acct_rk","permissions":{"events":true}}`, "permissions[events]", 400},
			{"/admin/api_keys", `{"account":"acct_rk","permissions":["events"]}`, "permissions", 400},
			{"/admin/api_keys", `{"account":"acct_rk","rate_limit":-1}`, "rate_limit", 400},
			{"/admin/api_keys", `{"account":"acct_rk","rate_limit":1000001}`, "rate_limit", 400},
			{"/admin/api_keys", `{"account":"acct_rk","rate_limit":"10"}`, "rate_limit", 400},
			{"/admin/api_keys/" + rk.ID, `{}`, "rate_limit", 400},
			{"/admin/api_keys/" + rk.ID, `{"rate_limit":1.5}`, "rate_limit", 400},
			{"/admin/api_keys/" + rk.ID, `{"rate_limit":5,"x":1}`, "x", 400},
			{"/admin/api_keys/" + rk.ID + "/roll", `{}`, "expires_in", 400},
			{"/admin/api_keys/" + rk.ID + "/roll", `{"expires_in":-1}`, "expires_in", 400},
			{"/admin/api_keys/" + rk.ID + "/roll", `{"expires_in":604801}`, "expires_in", 400},
			{"/admin/api_keys/key_01kaj2c8v6f3q9ysq7m2d0w1xz/roll", `{"expires_in":0}`, "id", 404},
			{"/admin/api_keys/key_01kaj2c8v6f3q9ysq7m2d0w1xz", `{"rate_limit":1}`, "id", 404},
		} {
			r := do(t, "POST", s.admin+tc.path, strings.NewReader(tc.body), jsonHeaders(testAdminToken))
			if r.status != tc.status || r.errBody(t).Error.Param != tc.param {
				t.Errorf("POST %s %s: %d %s, want %d naming %s", tc.path, tc.body, r.status, r.body, tc.status, tc.param)
			}
		}
		// A restricted secret can be imported, with the rk_ prefix of its mode only.
		r := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(`{"account":"acct_rk","permissions":{},"secret":"sk_test_`+strings.Repeat("a", 43)+`"}`), jsonHeaders(testAdminToken))
		if r.status != 400 || r.errBody(t).Error.Param != "secret" {
			t.Fatalf("sk_ secret for a restricted key: %d %s", r.status, r.body)
		}
	})
}

func TestGatewayRollKey(t *testing.T) {
	s := startStack(t, nil)
	old := s.createKey(t, "acct_roll", false)
	url := s.public + "/v1/webhook_endpoints"

	r := do(t, "POST", s.admin+"/admin/api_keys/"+old.ID+"/roll", strings.NewReader(`{"expires_in":2}`), jsonHeaders(testAdminToken))
	if r.status != 201 {
		t.Fatalf("roll: %d %s", r.status, r.body)
	}
	rolledAt := time.Now()
	var next restrictedKey
	r.json(t, &next)
	if next.ID == old.ID || next.Secret == nil || *next.Secret == *old.Secret || next.Type != "secret" || next.Account != "acct_roll" || next.Expires != nil {
		t.Fatalf("successor = %s", r.body)
	}
	var oldNow restrictedKey
	do(t, "GET", s.admin+"/admin/api_keys/"+old.ID, nil, bearer(testAdminToken)).json(t, &oldNow)
	if oldNow.Expires == nil || *oldNow.Expires < rolledAt.Unix()+1 || *oldNow.Expires > rolledAt.Unix()+3 || oldNow.Secret != nil {
		t.Fatalf("old key after roll = %+v", oldNow)
	}
	// Both work during the overlap.
	for _, sec := range []string{*old.Secret, *next.Secret} {
		if r := do(t, "GET", url, nil, bearer(sec)); r.status != 200 {
			t.Fatalf("during the overlap: %d", r.status)
		}
	}
	// Rolling the rolled key again is refused.
	do(t, "POST", s.admin+"/admin/api_keys/"+old.ID+"/roll", strings.NewReader(`{"expires_in":0}`), jsonHeaders(testAdminToken)).
		expectError(t, 400, "invalid_request_error", "invalid_state")
	time.Sleep(time.Until(rolledAt.Add(2100 * time.Millisecond)))
	do(t, "GET", url, nil, bearer(*old.Secret)).expectError(t, 401, "authentication_error", "api_key_invalid")
	if r := do(t, "GET", url, nil, bearer(*next.Secret)); r.status != 200 {
		t.Fatalf("successor after the old key expired: %d", r.status)
	}
	// A revoked key cannot be rolled.
	s.revokeKey(t, next.ID)
	do(t, "POST", s.admin+"/admin/api_keys/"+next.ID+"/roll", strings.NewReader(`{"expires_in":0}`), jsonHeaders(testAdminToken)).
		expectError(t, 400, "invalid_request_error", "invalid_state")
}
