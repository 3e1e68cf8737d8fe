// Package contract checks HTTP exchanges against an OpenAPI document, and counts which
// operations and statuses they exercised. The end-to-end suite sends every request through
// Transport, so an answer the document does not describe — an undocumented status, field,
// header or error code — fails the suite, and so does a request the document calls invalid that
// the platform accepted.
//
// The validator is libopenapi-validator (pb33f): it reads OpenAPI 3.1 natively (type arrays,
// JSON Schema 2020-12 through santhosh-tekuri/jsonschema), and its strict mode reports
// undeclared properties, query parameters and headers even where a schema would allow them.
// kin-openapi's openapi3filter was the other candidate; its 3.1 support was still an open
// pull request when this was written (getkin/kin-openapi#1125), and it does not read
// `type: [T, "null"]`.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Checker checks exchanges against one document.
type Checker struct {
	name  string
	v     validator.Validator
	model *v3.Document
	opts  *config.ValidationOptions
	raw   document
	// maps and arrayMaps name the properties whose keys strict mode may not report
	// (mapNames).
	maps, arrayMaps map[string]bool

	// validating serializes the validator's calls: its strict mode renders schemas as it
	// goes, writing libopenapi's shared model (DynamicValue.MarshalYAMLInlineWithContext), a
	// data race between two exchanges checked at once (seen under -race in the e2e suite).
	validating sync.Mutex

	mu sync.Mutex
	// seen counts exchanges per operation and status.
	seen map[Operation]map[string]int
}

// Operation is a documented operation: its method (upper case) and path template.
type Operation struct {
	Method, Path string
}

func (o Operation) String() string { return o.Method + " " + o.Path }

// unrouted are the codes of the gateway's answers to a request no operation takes.
var unrouted = []string{"route_missing", "method_not_allowed", "api_key_invalid", "admin_token_invalid",
	"authentication_rate_limited", "rate_limited", "permission_denied"}

// New parses a document (JSON, as the gateway serves it). name says which document problems
// are about.
func New(name string, spec []byte) (*Checker, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	opts := []config.Option{
		config.WithStrictMode(),
		// Authentication is the platform's to judge: the suite sends no key, wrong keys and
		// other kinds of keys on purpose, and checks the 401s and 403s it gets against the
		// document like any answer.
		config.WithoutSecurityValidation(),
		config.WithFormatAssertions(),
		// What a user agent adds on its own (Node's fetch, a browser): not the API's parameters.
		config.WithStrictIgnoredHeadersExtra("sec-fetch-mode", "sec-fetch-site", "sec-fetch-dest", "sec-fetch-user",
			"sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "upgrade-insecure-requests", "priority", "dnt"),
	}
	v, errs := validator.NewValidator(doc, opts...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", name, errs)
	}
	var raw document
	if err := json.Unmarshal(spec, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Checker{name: name, v: v, model: &model.Model, opts: config.NewValidationOptions(opts...), raw: raw, seen: map[Operation]map[string]int{}}
	c.maps, c.arrayMaps = mapNames(spec)
	return c, nil
}

// Check checks one exchange and counts it. body and respBody are the bodies as sent and
// received (req and resp bodies are not read). It returns the problems found, each a sentence.
func (c *Checker) Check(req *http.Request, body []byte, resp *http.Response, respBody []byte) []string {
	req = withBody(req, body)
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	item, _, template := paths.FindPath(req, c.model, c.opts)
	method := strings.ToUpper(req.Method)
	op, documented := c.raw.operation(template, method)
	if item == nil || !documented {
		// No operation takes this request: the gateway must refuse it with its envelope.
		code, ok := errorCode(respBody)
		switch {
		case resp.StatusCode < 400:
			add("%s %s is not in the %s document, yet answered %d", method, req.URL.Path, c.name, resp.StatusCode)
		case !ok:
			add("%s %s (not in the %s document) answered %d without the error envelope", method, req.URL.Path, c.name, resp.StatusCode)
		case !slices.Contains(unrouted, code):
			add("%s %s (not in the %s document) answered %d %s; a request no operation takes may only get %s",
				method, req.URL.Path, c.name, resp.StatusCode, code, strings.Join(unrouted, ", "))
		}
		return problems
	}
	key := Operation{Method: method, Path: template}
	status := strconv.Itoa(resp.StatusCode)
	c.mu.Lock()
	if c.seen[key] == nil {
		c.seen[key] = map[string]int{}
	}
	c.seen[key][status]++
	c.mu.Unlock()

	c.validating.Lock()
	_, reqErrs := c.v.ValidateHttpRequestSyncWithPathItem(req, item, template)
	_, respErrs := c.v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(withBody(req, body), withRespBody(resp, respBody), item, template)
	c.validating.Unlock()
	respErrs = slices.DeleteFunc(respErrs, c.undeclaredInMap)
	reqErrs = slices.DeleteFunc(reqErrs, c.undeclaredInMap)
	for _, e := range respErrs {
		add("%s %s → %d: the answer does not fit the %s document: %s", method, req.URL.RequestURI(), resp.StatusCode, c.name, describe(e))
	}
	if len(reqErrs) > 0 && resp.StatusCode < 400 {
		for _, e := range reqErrs {
			add("%s %s → %d: the platform accepted a request the %s document calls invalid: %s", method, req.URL.RequestURI(), resp.StatusCode, c.name, describe(e))
		}
	}
	if resp.StatusCode >= 400 {
		if code, ok := errorCode(respBody); ok {
			allowed := c.raw.errorCodes(op, status)
			if !slices.Contains(allowed, code) {
				add("%s %s → %d %s: the %s document lists %s for %s %s %s", method, req.URL.RequestURI(), resp.StatusCode, code,
					c.name, listOrNone(allowed), status, method, template)
			}
		}
	}
	return problems
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "no code"
	}
	return "only " + strings.Join(s, ", ")
}

func describe(e *verrors.ValidationError) string {
	s := e.Message
	if e.Reason != "" && e.Reason != e.Message {
		s += " (" + e.Reason + ")"
	}
	for _, se := range e.SchemaValidationErrors {
		if se == nil {
			continue
		}
		s += fmt.Sprintf("; %s: %s", se.FieldPath, se.Reason)
	}
	return s
}

func errorCode(body []byte) (string, bool) {
	var env struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil {
		return "", false
	}
	return env.Error.Code, true
}

func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r
}

func withRespBody(resp *http.Response, body []byte) *http.Response {
	r := *resp
	r.Body = io.NopCloser(bytes.NewReader(body))
	return &r
}

// Coverage is what the checked exchanges exercised.
type Coverage struct {
	// Operations lists every documented operation with, per documented status, how many
	// exchanges got it.
	Operations []OperationCoverage
}

// OperationCoverage is one operation's figures.
type OperationCoverage struct {
	Operation
	Statuses map[string]int // documented status -> exchanges (0: never)
	// Other counts answers with statuses the document does not list (reported as problems too).
	Other map[string]int
}

// Exercised reports whether any exchange reached the operation.
func (o OperationCoverage) Exercised() bool {
	for _, n := range o.Statuses {
		if n > 0 {
			return true
		}
	}
	return len(o.Other) > 0
}

// Coverage returns the figures so far.
func (c *Checker) Coverage() Coverage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out Coverage
	for _, op := range c.raw.operations() {
		oc := OperationCoverage{Operation: op, Statuses: map[string]int{}, Other: map[string]int{}}
		for _, s := range c.raw.statuses(op) {
			oc.Statuses[s] = c.seen[op][s]
		}
		for s, n := range c.seen[op] {
			if _, ok := oc.Statuses[s]; !ok {
				oc.Other[s] = n
			}
		}
		out.Operations = append(out.Operations, oc)
	}
	return out
}

// Report renders the coverage as a table: each operation, the statuses it was answered with
// (count) and those it never was; then the totals.
func (cv Coverage) Report(name string) string {
	var b strings.Builder
	ops, exercised, statuses, hit := 0, 0, 0, 0
	fmt.Fprintf(&b, "contract coverage of the %s document (operation: status×exchanges; never: documented statuses no exchange got)\n", name)
	for _, o := range cv.Operations {
		ops++
		if o.Exercised() {
			exercised++
		}
		var got, never []string
		for _, s := range slices.Sorted(mapKeys(o.Statuses)) {
			statuses++
			if n := o.Statuses[s]; n > 0 {
				hit++
				got = append(got, fmt.Sprintf("%s×%d", s, n))
			} else {
				never = append(never, s)
			}
		}
		mark := "  "
		if !o.Exercised() {
			mark = "✗ "
		}
		fmt.Fprintf(&b, "%s%-62s %s", mark, o.Operation.String(), strings.Join(got, " "))
		if len(never) > 0 {
			fmt.Fprintf(&b, "   never: %s", strings.Join(never, " "))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%d of %d operations exercised (%.0f%%); %d of %d documented statuses (%.0f%%)\n",
		exercised, ops, pct(exercised, ops), hit, statuses, pct(hit, statuses))
	return b.String()
}

// Unexercised lists the operations no exchange reached.
func (cv Coverage) Unexercised() []Operation {
	var out []Operation
	for _, o := range cv.Operations {
		if !o.Exercised() {
			out = append(out, o.Operation)
		}
	}
	return out
}

func pct(a, b int) float64 {
	if b == 0 {
		return 100
	}
	return 100 * float64(a) / float64(b)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
