// Package build makes the API's OpenAPI documents (api/openapi.yaml, api/admin.openapi.yaml)
// from their sources in api/src. A source is OpenAPI 3.1 as written by hand, one file per
// area, with the parts that every operation shares left out; build merges the files and adds
// those parts, the same way for every operation, so none is forgotten:
//
//   - the response headers every answer carries (Request-Id, the trace context; the RateLimit-* fields on the
//     public listener; Idempotent-Replayed and Original-Request on a POST, whose answer may
//     be a replay);
//   - the Idempotency-Key header parameter of every public operation;
//   - the error answers of an operation's `x-errors` ({status: [codes]}), each the error
//     envelope with `x-error-codes` (its own codes and those every operation of its method
//     may answer) and a description naming them;
//   - the answers of the gateway itself (401, 403, 429, 5xx; 413 and 415 for a POST), shared
//     by reference.
//
// Every code an answer names must be in the ErrorCode schema's enum.
package build

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Kind says which listener a document describes; the shared parts differ.
type Kind int

// The two listeners.
const (
	Public Kind = iota
	Admin
)

// policy is what Expand adds to a document of one kind.
type policy struct {
	idempotencyParam bool
	limitedHeaders   bool
	replayHeaders    bool
	// shared are the gateway's answers, by status, added to every operation (bodyShared to
	// POSTs too), as references to components.responses.
	shared, bodyShared map[string]string
	// common are the codes every operation may answer, by status; postCommon those of POSTs.
	common, postCommon map[string][]string
}

func policyOf(k Kind) policy {
	if k == Admin {
		return policy{
			shared:     map[string]string{"401": "Unauthorized", "429": "TooManyRequests", "500": "InternalError", "503": "ServiceUnavailable"},
			bodyShared: map[string]string{"413": "PayloadTooLarge", "415": "UnsupportedMediaType"},
			common:     map[string][]string{"400": {"parameter_duplicate", "parameter_invalid", "parameter_unknown"}},
			postCommon: map[string][]string{"400": {"body_invalid_json"}},
		}
	}
	return policy{
		idempotencyParam: true, limitedHeaders: true, replayHeaders: true,
		shared: map[string]string{
			"401": "Unauthorized", "403": "Forbidden", "429": "TooManyRequests", "500": "InternalError",
			"502": "BadGateway", "503": "ServiceUnavailable", "504": "GatewayTimeout",
		},
		bodyShared: map[string]string{"413": "PayloadTooLarge", "415": "UnsupportedMediaType"},
		// Every operation reads its whole query: a parameter it does not take, or one given
		// twice, is refused by name; so is a malformed Idempotency-Key header
		// (parameter_invalid).
		common: map[string][]string{"400": {"parameter_duplicate", "parameter_invalid", "parameter_unknown"}},
		postCommon: map[string][]string{
			"400": {"body_invalid_json", "body_unreadable", "idempotency_key_reused"},
			"409": {"idempotency_key_in_use"},
		},
	}
}

// baseHeaders are on every answer: the request id, and the W3C trace context of the request's
// span (traceparent; tracestate when the request carried one), which names its trace.
var baseHeaders = []string{"Request-Id", "Traceparent", "Tracestate"}

var statusTitles = map[string]string{
	"400": "The request is invalid; nothing was changed.",
	"404": "Not found for this account and mode.",
	"409": "A conflict with the object's state or with a concurrent request; nothing was changed.",
	"413": "The body is too large.",
	"415": "The body's media type is not accepted.",
}

// Expand reads the document dir/openapi.yaml, merges the files its `x-apigen.include` names
// (paths, webhooks, tags and components), and adds the shared parts of its kind.
func Expand(dir string, kind Kind) (*yaml.Node, error) {
	root, err := readDoc(filepath.Join(dir, "openapi.yaml"))
	if err != nil {
		return nil, err
	}
	// The source's own opening comment is about the source.
	root.HeadComment, root.Content[0].HeadComment = "", ""
	gen := takeKey(root, "x-apigen")
	if gen != nil {
		for _, inc := range get(gen, "include").Content {
			part, err := readDoc(filepath.Join(dir, inc.Value))
			if err != nil {
				return nil, err
			}
			if err := merge(root, part, inc.Value); err != nil {
				return nil, err
			}
		}
	}
	// The shared answers (components.responses) carry the headers of every answer too.
	for _, r := range mapValues(get(get(root, "components"), "responses")) {
		addHeaders(r, baseHeaders)
	}
	codes, err := errorCodes(root)
	if err != nil {
		return nil, err
	}
	p := policyOf(kind)
	paths := get(root, "paths")
	if paths == nil {
		return nil, errors.New("no paths")
	}
	for i := 0; i < len(paths.Content); i += 2 {
		path, item := paths.Content[i].Value, paths.Content[i+1]
		for j := 0; j < len(item.Content); j += 2 {
			method := item.Content[j].Value
			switch method {
			case "get", "post", "delete", "put", "patch", "head":
			default:
				continue
			}
			if err := p.operation(item.Content[j+1], method, codes); err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(method), path, err)
			}
		}
	}
	return root, nil
}

// operation adds the shared parts to one operation.
func (p policy) operation(op *yaml.Node, method string, known map[string]bool) error {
	if get(op, "operationId") == nil {
		return errors.New("no operationId")
	}
	// An operation with `security: []` needs no key: the gateway answers it before
	// authentication, so none of the keyed parts apply.
	keyed := !isEmptySeq(get(op, "security"))
	if p.idempotencyParam && keyed {
		params := get(op, "parameters")
		if params == nil {
			params = &yaml.Node{Kind: yaml.SequenceNode}
			setKey(op, "parameters", params)
		}
		params.Content = append([]*yaml.Node{ref("#/components/parameters/IdempotencyKey")}, params.Content...)
	}
	responses := get(op, "responses")
	if responses == nil {
		return errors.New("no responses")
	}
	post := method == "post"
	headers := slices.Clone(baseHeaders)
	if p.limitedHeaders && keyed {
		headers = append(headers, "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
	}
	if p.replayHeaders && post && keyed {
		// Only requests with a key are kept for replays (a hosted page's form has none).
		headers = append(headers, "Idempotent-Replayed", "Original-Request")
	}
	for i := 0; i < len(responses.Content); i += 2 {
		addHeaders(responses.Content[i+1], headers)
	}

	errs := takeKey(op, "x-errors")
	byStatus := map[string][]string{}
	if errs != nil {
		for i := 0; i < len(errs.Content); i += 2 {
			for _, c := range errs.Content[i+1].Content {
				byStatus[errs.Content[i].Value] = append(byStatus[errs.Content[i].Value], c.Value)
			}
		}
	}
	if keyed {
		for s, cs := range p.common {
			byStatus[s] = append(byStatus[s], cs...)
		}
		if post {
			for s, cs := range p.postCommon {
				byStatus[s] = append(byStatus[s], cs...)
			}
		}
	}
	statuses := make([]string, 0, len(byStatus))
	for s := range byStatus {
		statuses = append(statuses, s)
	}
	slices.Sort(statuses)
	for _, s := range statuses {
		if get(responses, s) != nil {
			return fmt.Errorf("response %s is written out and also in x-errors", s)
		}
		cs := slices.Compact(slices.Sorted(slices.Values(byStatus[s])))
		for _, c := range cs {
			if !known[c] {
				return fmt.Errorf("code %s (x-errors %s) is not in the ErrorCode schema", c, s)
			}
		}
		setKey(responses, s, errorResponse(s, cs, headers))
	}
	if keyed {
		shared := maps(p.shared)
		if post {
			shared = append(shared, maps(p.bodyShared)...)
		}
		slices.SortFunc(shared, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		for _, sh := range shared {
			if get(responses, sh[0]) == nil {
				setKey(responses, sh[0], ref("#/components/responses/"+sh[1]))
			}
		}
	}
	sortKeys(responses)
	return nil
}

func maps(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	return out
}

// errorResponse is an answer with the error envelope and the codes it may carry.
func errorResponse(status string, codes []string, headers []string) *yaml.Node {
	quoted := make([]string, len(codes))
	seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for i, c := range codes {
		quoted[i] = "`" + c + "`"
		seq.Content = append(seq.Content, str(c))
	}
	title := statusTitles[status]
	if title == "" {
		title = "An error."
	}
	r := mapping(
		"description", str(title+" Codes: "+strings.Join(quoted, ", ")+"."),
		"content", mapping("application/json", mapping("schema", ref("#/components/schemas/Error"))),
		"x-error-codes", seq,
	)
	addHeaders(r, headers)
	return r
}

// addHeaders adds the named headers (references to components.headers) to a response that
// is not itself a reference, unless it already has them.
func addHeaders(resp *yaml.Node, names []string) {
	if resp.Kind != yaml.MappingNode || get(resp, "$ref") != nil {
		return
	}
	h := get(resp, "headers")
	if h == nil {
		h = &yaml.Node{Kind: yaml.MappingNode}
		// headers go right after the description, as written by hand.
		resp.Content = append(resp.Content[:2], append([]*yaml.Node{str("headers"), h}, resp.Content[2:]...)...)
	}
	for _, n := range names {
		if get(h, n) == nil {
			h.Content = append(h.Content, str(n), ref("#/components/headers/"+n))
		}
	}
}

// errorCodes returns the enum of components.schemas.ErrorCode.
func errorCodes(root *yaml.Node) (map[string]bool, error) {
	enum := get(get(get(get(root, "components"), "schemas"), "ErrorCode"), "enum")
	if enum == nil {
		return nil, errors.New("no components.schemas.ErrorCode.enum")
	}
	out := map[string]bool{}
	for _, c := range enum.Content {
		out[c.Value] = true
	}
	return out, nil
}

// merge adds part's paths, webhooks, tags and components to root; a key both define is an
// error.
func merge(root, part *yaml.Node, name string) error {
	for i := 0; i < len(part.Content); i += 2 {
		key, val := part.Content[i].Value, part.Content[i+1]
		switch key {
		case "paths", "webhooks":
			if err := mergeMap(root, key, val, name); err != nil {
				return err
			}
		case "tags":
			t := get(root, "tags")
			if t == nil {
				setKey(root, "tags", val)
				continue
			}
			t.Content = append(t.Content, val.Content...)
		case "components":
			comps := get(root, "components")
			if comps == nil {
				comps = &yaml.Node{Kind: yaml.MappingNode}
				setKey(root, "components", comps)
			}
			for j := 0; j < len(val.Content); j += 2 {
				if err := mergeMap(comps, val.Content[j].Value, val.Content[j+1], name); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%s: only paths, webhooks, tags and components may be in a part, not %s", name, key)
		}
	}
	return nil
}

func mergeMap(parent *yaml.Node, key string, val *yaml.Node, name string) error {
	dst := get(parent, key)
	if dst == nil {
		setKey(parent, key, val)
		return nil
	}
	// A frame's empty `paths: {}` is written in flow style, which would put every merged
	// path on one line.
	dst.Style = 0
	for i := 0; i < len(val.Content); i += 2 {
		k := val.Content[i].Value
		if get(dst, k) != nil {
			return fmt.Errorf("%s: %s.%s is defined twice", name, key, k)
		}
		dst.Content = append(dst.Content, val.Content[i], val.Content[i+1])
	}
	return nil
}

func readDoc(path string) (*yaml.Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a YAML mapping", path)
	}
	return doc.Content[0], nil
}

// YAML renders the document.
func YAML(root *yaml.Node, header string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// JSON renders the document as indented JSON, keys in the document's order.
func JSON(root *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, root); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteByte(':')
			if err := writeJSON(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			b, _ := json.Marshal(n.Value)
			buf.Write(b)
		case "!!int", "!!float":
			if _, err := strconv.ParseFloat(n.Value, 64); err != nil {
				return fmt.Errorf("line %d: number %q", n.Line, n.Value)
			}
			buf.WriteString(n.Value)
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return err
			}
			buf.WriteString(strconv.FormatBool(v))
		case "!!null":
			buf.WriteString("null")
		default:
			return fmt.Errorf("line %d: scalar of tag %s", n.Line, n.ShortTag())
		}
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias)
	default:
		return fmt.Errorf("line %d: node kind %d", n.Line, n.Kind)
	}
	return nil
}

// Node helpers.

func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func takeKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return v
		}
	}
	return nil
}

func setKey(m *yaml.Node, key string, val *yaml.Node) {
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = val
			return
		}
	}
	m.Content = append(m.Content, str(key), val)
}

// sortKeys orders a responses map by status.
func sortKeys(m *yaml.Node) {
	type kv struct{ k, v *yaml.Node }
	pairs := make([]kv, 0, len(m.Content)/2)
	for i := 0; i < len(m.Content); i += 2 {
		pairs = append(pairs, kv{m.Content[i], m.Content[i+1]})
	}
	slices.SortStableFunc(pairs, func(a, b kv) int { return strings.Compare(a.k.Value, b.k.Value) })
	m.Content = m.Content[:0]
	for _, p := range pairs {
		m.Content = append(m.Content, p.k, p.v)
	}
}

// mapValues returns a mapping's values (none for nil).
func mapValues(m *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	if m == nil {
		return nil
	}
	for i := 1; i < len(m.Content); i += 2 {
		out = append(out, m.Content[i])
	}
	return out
}

func isEmptySeq(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.SequenceNode && len(n.Content) == 0
}

func str(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	// Statuses stay quoted in YAML ('200'), as OpenAPI writes them.
	if _, err := strconv.Atoi(s); err == nil {
		n.Style = yaml.SingleQuotedStyle
	}
	return n
}

func ref(target string) *yaml.Node { return mapping("$ref", str(target)) }

func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < len(kv); i += 2 {
		m.Content = append(m.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return m
}
