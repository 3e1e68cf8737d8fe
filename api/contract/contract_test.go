package contract

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const spec = `{
  "openapi": "3.1.0",
  "info": {"title": "T", "version": "1"},
  "paths": {
    "/v1/things/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "post": {
        "operationId": "UpdateThing",
        "requestBody": {"content": {"application/json": {"schema": {
          "type": "object", "additionalProperties": false,
          "properties": {"name": {"type": "string", "maxLength": 5}, "metadata": {"$ref": "#/components/schemas/Metadata"}}}}}},
        "responses": {
          "200": {"description": "ok",
            "headers": {"Request-Id": {"schema": {"type": "string"}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
          "400": {"description": "bad",
            "headers": {"Request-Id": {"schema": {"type": "string"}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            "x-error-codes": ["parameter_invalid"]},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    }
  },
  "components": {
    "responses": {"NotFound": {"description": "gone",
      "headers": {"Request-Id": {"schema": {"type": "string"}}},
      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
      "x-error-codes": ["resource_missing"]}},
    "schemas": {
      "Metadata": {"type": "object", "additionalProperties": {"type": "string"}},
      "Thing": {"type": "object", "additionalProperties": false, "required": ["id", "name", "metadata"],
        "properties": {"id": {"type": "string"}, "name": {"type": ["string", "null"]}, "metadata": {"$ref": "#/components/schemas/Metadata"}}},
      "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}
    }
  }
}`

type exchange struct {
	method, path, body string
	status             int
	header             map[string]string
	respBody           string
}

func (e exchange) check(t *testing.T, c *Checker) []string {
	t.Helper()
	req := httptest.NewRequest(e.method, "http://127.0.0.1:8080"+e.path, strings.NewReader(e.body))
	req.Header.Set("Content-Type", "application/json")
	h := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_1"}}
	for k, v := range e.header {
		h.Set(k, v)
	}
	resp := &http.Response{StatusCode: e.status, Header: h}
	return c.Check(req, []byte(e.body), resp, []byte(e.respBody))
}

func TestCheck(t *testing.T) {
	c, err := New("test", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"id":"t_1","name":null,"metadata":{"any":"key"}}`
	for _, tc := range []struct {
		name string
		ex   exchange
		want string // a part of the one problem expected; "" for none
	}{
		{"a documented answer", exchange{"POST", "/v1/things/t_1", `{"name":"ab","metadata":{"k":"v"}}`, 200, nil, ok}, ""},
		{"a documented error", exchange{"POST", "/v1/things/t_1", `{"name":"abcdefgh"}`, 400, nil, `{"error":{"code":"parameter_invalid"}}`}, ""},
		{"a documented error by reference", exchange{"POST", "/v1/things/t_2", `{}`, 404, nil, `{"error":{"code":"resource_missing"}}`}, ""},
		{"a map's keys, any", exchange{"POST", "/v1/things/t_1", `{"metadata":{"a.b":"v","/x":"y"}}`, 200, nil, `{"id":"t_1","name":null,"metadata":{"a.b":"v","/x":"y"}}`}, ""},
		{"a map's value of the wrong type", exchange{"POST", "/v1/things/t_1", `{}`, 200, nil, `{"id":"t_1","name":null,"metadata":{"k":1}}`}, "does not fit"},
		{"an undocumented field", exchange{"POST", "/v1/things/t_1", `{}`, 200, nil, `{"id":"t_1","name":null,"metadata":{},"extra":1}`}, "extra"},
		{"a field of the wrong type", exchange{"POST", "/v1/things/t_1", `{}`, 200, nil, `{"id":"t_1","name":5,"metadata":{}}`}, "does not fit"},
		{"an undocumented status", exchange{"POST", "/v1/things/t_1", `{}`, 409, nil, `{"error":{"code":"lock_timeout"}}`}, "409"},
		{"an undocumented code", exchange{"POST", "/v1/things/t_1", `{}`, 400, nil, `{"error":{"code":"parameter_missing"}}`}, "lists only parameter_invalid"},
		{"an undocumented header", exchange{"POST", "/v1/things/t_1", `{}`, 200, map[string]string{"X-Secret": "1"}, ok}, "X-Secret"},
		{"an invalid request accepted", exchange{"POST", "/v1/things/t_1", `{"nmae":"x"}`, 200, nil, ok}, "accepted a request"},
		{"an invalid request refused", exchange{"POST", "/v1/things/t_1", `{"nmae":"x"}`, 400, nil, `{"error":{"code":"parameter_invalid"}}`}, ""},
		{"an unknown path refused", exchange{"GET", "/v1/nothing", ``, 404, nil, `{"error":{"code":"route_missing"}}`}, ""},
		{"an unknown path answered", exchange{"GET", "/v1/nothing", ``, 200, nil, `{}`}, "not in the test document"},
		{"a method the path lacks", exchange{"DELETE", "/v1/things/t_1", ``, 404, nil, `{"error":{"code":"resource_missing"}}`}, "may only get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := tc.ex.check(t, c)
			if tc.want == "" {
				if len(problems) > 0 {
					t.Fatalf("problems: %q", problems)
				}
				return
			}
			if len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Fatalf("got %q, want a problem about %q", problems, tc.want)
			}
		})
	}
	cov := c.Coverage()
	if len(cov.Operations) != 1 || cov.Operations[0].Statuses["200"] == 0 || cov.Operations[0].Statuses["404"] != 1 || cov.Operations[0].Other["409"] != 1 {
		t.Fatalf("coverage %+v", cov)
	}
	if un := cov.Unexercised(); len(un) != 0 {
		t.Fatalf("unexercised %v", un)
	}
	if r := cov.Report("test"); !strings.Contains(r, "1 of 1 operations exercised") {
		t.Fatalf("report:\n%s", r)
	}
}

func TestRouteProblems(t *testing.T) {
	got := RouteProblems([]byte(spec), [][2]string{{"POST", "/v1/things/:thing"}, {"GET", "/v1/things"}}, "/v1/things")
	if len(got) != 1 || !strings.Contains(got[0], "GET /v1/things is not an operation") {
		t.Fatalf("%q", got)
	}
	got = RouteProblems([]byte(spec), nil, "/v1/things")
	if len(got) != 1 || !strings.Contains(got[0], "POST /v1/things/{id} of the contract is served by no route") {
		t.Fatalf("%q", got)
	}
}
