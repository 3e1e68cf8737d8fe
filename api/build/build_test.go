package build

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The checked-in documents are what the sources make: `make generate` was run after the last
// edit of api/src.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	files, err := Files("..")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("api/%s is not what api/src makes (%v): run `make generate`", name, err)
		}
	}
}

func expandFixture(t *testing.T, edit func(part string) string) (map[string]any, error) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"openapi.yaml", "part.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "frame", f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if f == "part.yaml" && edit != nil {
			s = edit(s)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := Expand(dir, Public)
	if err != nil {
		return nil, err
	}
	j, err := JSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func at(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func keys(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestExpand(t *testing.T) {
	doc, err := expandFixture(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	get := at(doc, "paths", "/v1/things/{id}", "get")
	if got := keys(at(get, "responses")); !slices.Equal(got, []string{"200", "400", "401", "403", "404", "429", "500", "502", "503", "504"}) {
		t.Errorf("GET responses %v", got)
	}
	if got := keys(at(get, "responses", "200", "headers")); !slices.Equal(got, []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Request-Id", "Traceparent", "Tracestate"}) {
		t.Errorf("GET 200 headers %v", got)
	}
	if got := at(get, "responses", "404", "x-error-codes"); !slices.Equal(toStrings(got), []string{"resource_missing"}) {
		t.Errorf("GET 404 codes %v", got)
	}
	if got := at(get, "responses", "400", "x-error-codes"); !slices.Equal(toStrings(got), []string{"parameter_duplicate", "parameter_invalid", "parameter_unknown"}) {
		t.Errorf("GET 400 codes %v", got)
	}
	if got := at(get, "responses", "401", "$ref"); got != "#/components/responses/Unauthorized" {
		t.Errorf("GET 401 %v", got)
	}
	if p, _ := at(get, "parameters").([]any); len(p) != 1 || at(p[0], "$ref") != "#/components/parameters/IdempotencyKey" {
		t.Errorf("GET parameters %v", p)
	}
	if at(get, "x-errors") != nil {
		t.Error("x-errors left in the output")
	}
	post := at(doc, "paths", "/v1/things/{id}", "post")
	if got := keys(at(post, "responses")); !slices.Equal(got, []string{"200", "400", "401", "403", "409", "413", "415", "429", "500", "502", "503", "504"}) {
		t.Errorf("POST responses %v", got)
	}
	if got := keys(at(post, "responses", "200", "headers")); !slices.Contains(got, "Idempotent-Replayed") || !slices.Contains(got, "Original-Request") {
		t.Errorf("POST 200 headers %v", got)
	}
	if got := toStrings(at(post, "responses", "400", "x-error-codes")); !slices.Contains(got, "body_invalid_json") || !slices.Contains(got, "idempotency_key_reused") {
		t.Errorf("POST 400 codes %v", got)
	}
	open := at(doc, "paths", "/open", "get")
	if got := keys(at(open, "responses")); !slices.Equal(got, []string{"200"}) || at(open, "parameters") != nil {
		t.Errorf("an operation without a key got the keyed parts: %v %v", got, at(open, "parameters"))
	}
	if got := keys(at(open, "responses", "200", "headers")); !slices.Equal(got, []string{"Request-Id", "Traceparent", "Tracestate"}) {
		t.Errorf("open 200 headers %v", got)
	}
	if got := keys(at(doc, "components", "responses", "Unauthorized", "headers")); !slices.Equal(got, []string{"Request-Id", "Traceparent", "Tracestate"}) {
		t.Errorf("shared response headers %v", got)
	}
	if at(doc, "x-apigen") != nil {
		t.Error("x-apigen left in the output")
	}
}

func toStrings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, len(a))
	for i, s := range a {
		out[i], _ = s.(string)
	}
	return out
}

func TestExpandRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"a code not in ErrorCode", "[resource_missing]", "[resource_mising]", "resource_mising"},
		{"a status both written and in x-errors", "'200': {description: ok}\n    post:", "'200': {description: ok}\n        '404': {description: gone}\n    post:", "written out and also in x-errors"},
		{"no operationId", "operationId: UpdateThing", "summary: x", "no operationId"},
		{"a name defined twice", "paths:", "components:\n  responses:\n    Unauthorized: {description: again}\npaths:", "defined twice"},
		{"a key a part may not hold", "paths:", "info: {title: x}\npaths:", "only paths"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := expandFixture(t, func(s string) string {
				if !strings.Contains(s, tc.old) {
					t.Fatalf("fixture lacks %q", tc.old)
				}
				return strings.Replace(s, tc.old, tc.new, 1)
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}
