package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestGatewayAdminRefusesAmbiguousInput: the admin API reads bodies and queries with the
// shared rules (libs/jsonbody, libs/fiberx, libs/listing): a repeated parameter, an empty list
// parameter and text that is not UTF-8 are refused by name; an imported secret must have the
// generated form, and the refusal says which.
func TestGatewayAdminRefusesAmbiguousInput(t *testing.T) {
	s := startStack(t, nil)
	s.createKey(t, "acct_input", false)

	t.Run("bodies", func(t *testing.T) {
		generated := "sk_test_" + strings.Repeat("aZ9", 15)[:43]
		for _, tc := range []struct {
			name, body, code, param string
		}{
			{"repeated account", `{"account":"acct_a","account":"acct_b"}`, "parameter_duplicate", "account"},
			{"repeated livemode", `{"account":"acct_a","livemode":false,"livemode":true}`, "parameter_duplicate", "livemode"},
			{"repeated permission", `{"account":"acct_a","permissions":{"events":"read","events":"write"}}`, "parameter_duplicate", "permissions[events]"},
			{"account not UTF-8", "{\"account\":\"acct_\xff\"}", "parameter_invalid", "account"},
			{"account with half a surrogate", `{"account":"acct_a\udc00"}`, "parameter_invalid", "account"},
			// What NewSecret makes is what may be imported: 43 letters and digits.
			{"secret of 32 base64url characters", `{"account":"acct_a","secret":"sk_test_` + strings.Repeat("a", 32) + `"}`, "parameter_invalid", "secret"},
			{"secret with -", `{"account":"acct_a","secret":"sk_test_` + strings.Repeat("a", 42) + `-"}`, "parameter_invalid", "secret"},
			{"secret of 44 characters", `{"account":"acct_a","secret":"sk_test_` + strings.Repeat("a", 44) + `"}`, "parameter_invalid", "secret"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(tc.body), jsonHeaders(testAdminToken))
				e := r.expectError(t, 400, "invalid_request_error", tc.code)
				if e.Error.Param != tc.param {
					t.Fatalf("param = %q, want %q; body %s", e.Error.Param, tc.param, r.body)
				}
				if tc.param == "secret" && !strings.Contains(e.Error.Message, "43 letters and digits") {
					t.Fatalf("message %q does not state the generated form", e.Error.Message)
				}
			})
		}
		r := do(t, "POST", s.admin+"/admin/api_keys", strings.NewReader(fmt.Sprintf(`{"account":"acct_input","secret":%q}`, generated)), jsonHeaders(testAdminToken))
		if r.status != 201 {
			t.Fatalf("import of a secret in the generated form: %d %s", r.status, r.body)
		}
		if r := do(t, "GET", s.public+"/v1/webhook_endpoints", nil, bearer(generated)); r.status != 200 {
			t.Fatalf("the imported key: %d %s", r.status, r.body)
		}
	})

	t.Run("queries", func(t *testing.T) {
		for _, tc := range []struct{ query, code, param string }{
			{"limit=", "parameter_invalid", "limit"},
			{"limit=1&limit=2", "parameter_duplicate", "limit"},
			{"limit=2&limit=2", "parameter_duplicate", "limit"},
			{"account=acct_input&account=acct_other", "parameter_duplicate", "account"},
			{"account=", "parameter_invalid", "account"},
			{"created[gte]=1&created[gte]=2", "parameter_duplicate", "created[gte]"},
			{"created%5Blte%5D=1&created[lte]=2", "parameter_duplicate", "created[lte]"},
			{"created[gte]=", "parameter_invalid", "created[gte]"},
			{"starting_after=", "parameter_invalid", "starting_after"},
			{"account=acct_%FF", "parameter_invalid", "account"},
		} {
			t.Run(tc.query, func(t *testing.T) {
				r := do(t, "GET", s.admin+"/admin/api_keys?"+tc.query, nil, bearer(testAdminToken))
				e := r.expectError(t, 400, "invalid_request_error", tc.code)
				if e.Error.Param != tc.param {
					t.Fatalf("param = %q, want %q; body %s", e.Error.Param, tc.param, r.body)
				}
			})
		}
		if r := do(t, "GET", s.admin+"/admin/api_keys?account=acct_input&limit=1", nil, bearer(testAdminToken)); r.status != 200 {
			t.Fatalf("a well-formed list: %d %s", r.status, r.body)
		}
	})
}
