package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// document is the part of the OpenAPI document the checker reads itself: the operations,
// their documented statuses and each error answer's x-error-codes.
type document struct {
	Paths      map[string]pathItem `json:"paths"`
	Components struct {
		Responses map[string]rawResponse `json:"responses"`
	} `json:"components"`
}

// pathItem holds a path's operations by method (lower case); its other keys (parameters,
// summary) are not read.
type pathItem map[string]rawOperation

func (p *pathItem) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	*p = pathItem{}
	for _, m := range methods {
		raw, ok := all[strings.ToLower(m)]
		if !ok {
			continue
		}
		var op rawOperation
		if err := json.Unmarshal(raw, &op); err != nil {
			return err
		}
		(*p)[strings.ToLower(m)] = op
	}
	return nil
}

type rawOperation struct {
	OperationID string                 `json:"operationId"`
	Responses   map[string]rawResponse `json:"responses"`
}

type rawResponse struct {
	Ref        string   `json:"$ref"`
	ErrorCodes []string `json:"x-error-codes"`
}

var methods = []string{"GET", "POST", "DELETE", "PUT", "PATCH", "HEAD"}

// operation returns the operation of a path template and method.
func (d document) operation(template, method string) (rawOperation, bool) {
	op, ok := d.Paths[template][strings.ToLower(method)]
	return op, ok
}

// operations lists every operation, by path then method.
func (d document) operations() []Operation {
	var out []Operation
	for _, p := range slices.Sorted(mapKeys(d.Paths)) {
		for _, m := range methods {
			if _, ok := d.Paths[p][strings.ToLower(m)]; ok {
				out = append(out, Operation{Method: m, Path: p})
			}
		}
	}
	return out
}

// statuses lists an operation's documented statuses.
func (d document) statuses(o Operation) []string {
	op, _ := d.operation(o.Path, o.Method)
	return slices.Sorted(mapKeys(op.Responses))
}

// errorCodes returns the codes an operation's answer of status may carry (its response's
// x-error-codes, through a $ref to components.responses).
func (d document) errorCodes(op rawOperation, status string) []string {
	r, ok := op.Responses[status]
	if !ok {
		return nil
	}
	if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
		r = d.Components.Responses[name]
	}
	return r.ErrorCodes
}

// Operations lists every operation of a document (JSON), by path then method.
func Operations(spec []byte) ([]Operation, error) {
	var d document
	if err := json.Unmarshal(spec, &d); err != nil {
		return nil, err
	}
	return d.operations(), nil
}

// CompareRoutes compares a service's routes with the document's operations under the path
// prefixes the service owns. Routes are written as Fiber registers them (":id"), operations as
// OpenAPI does ("{id}"); the names of parameters need not agree. It returns the routes the
// document lacks and the operations no route serves.
func CompareRoutes(spec []byte, routes []Operation, prefixes ...string) (undocumented, unserved []Operation, err error) {
	ops, err := Operations(spec)
	if err != nil {
		return nil, nil, err
	}
	shape := func(path string) string {
		segs := strings.Split(path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") || (strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}")) {
				segs[i] = "{}"
			}
		}
		return strings.Join(segs, "/")
	}
	owned := func(path string) bool {
		for _, p := range prefixes {
			if path == p || strings.HasPrefix(path, p+"/") {
				return true
			}
		}
		return false
	}
	documented := map[Operation]bool{}
	for _, o := range ops {
		if owned(o.Path) {
			documented[Operation{o.Method, shape(o.Path)}] = true
		}
	}
	served := map[Operation]bool{}
	for _, r := range routes {
		k := Operation{strings.ToUpper(r.Method), shape(r.Path)}
		served[k] = true
		if !documented[k] {
			undocumented = append(undocumented, r)
		}
	}
	for _, o := range ops {
		if owned(o.Path) && !served[Operation{o.Method, shape(o.Path)}] {
			unserved = append(unserved, o)
		}
	}
	return undocumented, unserved, nil
}

// RouteProblems is CompareRoutes as sentences, for a service's test of its route table; routes
// are {method, path} pairs (fiberx.Routes).
func RouteProblems(spec []byte, routes [][2]string, prefixes ...string) []string {
	ops := make([]Operation, len(routes))
	for i, r := range routes {
		ops[i] = Operation{Method: r[0], Path: r[1]}
	}
	undocumented, unserved, err := CompareRoutes(spec, ops, prefixes...)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, r := range undocumented {
		out = append(out, fmt.Sprintf("route %s is not an operation of the contract (api/src)", r))
	}
	for _, o := range unserved {
		out = append(out, fmt.Sprintf("operation %s of the contract is served by no route", o))
	}
	return out
}
