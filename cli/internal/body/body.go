// Package body builds a request's JSON body from the command line's -d parameters.
//
// The API takes JSON with typed values (an amount is a number, enabled_events an array), so
// the form-style parameters have two forms, as HTTPie's do:
//
//	key=value       the string "value"
//	key:=json       the JSON value as written: 1250, true, null, ["a","b"], {"k":"v"}
//
// and a key addresses nested values with brackets, as Stripe's form encoding does:
//
//	metadata[tenant]=t_1        {"metadata": {"tenant": "t_1"}}
//	enabled_events[]=a.b        {"enabled_events": ["a.b"]}  (each [] appends)
//	items[0][amount]:=100       {"items": [{"amount": 100}]}  (an index names an element)
//
// A parameter that contradicts another (a key set twice, a key both an object and an array) is
// an error naming it, never a silent overwrite.
package body

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// maxIndex bounds an array index, so a typo (items[100000]) cannot make a huge body.
const maxIndex = 999

// Parse returns the JSON object the parameters describe (nil for none).
func Parse(params []string) (map[string]any, error) {
	if len(params) == 0 {
		return nil, nil
	}
	root := map[string]any{}
	for _, p := range params {
		path, value, err := parseParam(p)
		if err != nil {
			return nil, err
		}
		if err := set(root, path, value, p); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// segment is one step of a key's path: a field name, an index, or an append ([]).
type segment struct {
	name   string
	index  int // when name is "" and !append
	append bool
}

func parseParam(p string) ([]segment, any, error) {
	eq := strings.IndexByte(p, '=')
	if eq < 0 {
		return nil, nil, fmt.Errorf("-d %q: want key=value or key:=json", p)
	}
	key, raw := p[:eq], p[eq+1:]
	var value any = raw
	if strings.HasSuffix(key, ":") {
		key = key[:len(key)-1]
		if !json.Valid([]byte(raw)) {
			return nil, nil, fmt.Errorf("-d %q: the value after := is not JSON (a string is key=value, or key:='\"…\"')", p)
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber() // 12345678901234567890 stays as written
		if err := dec.Decode(&value); err != nil {
			return nil, nil, fmt.Errorf("-d %q: the value after := is not JSON: %v", p, err)
		}
	}
	path, err := parseKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("-d %q: %v", p, err)
	}
	return path, value, nil
}

// parseKey splits name[a][0][] into its segments.
func parseKey(key string) ([]segment, error) {
	open := strings.IndexByte(key, '[')
	name := key
	if open >= 0 {
		name = key[:open]
	}
	if name == "" {
		return nil, fmt.Errorf("the key has no name")
	}
	if strings.ContainsAny(name, "]") {
		return nil, fmt.Errorf("a ] without its [ in the key")
	}
	path := []segment{{name: name}}
	for rest := key[len(name):]; rest != ""; {
		if rest[0] != '[' {
			return nil, fmt.Errorf("%q after a ]: want [", rest)
		}
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return nil, fmt.Errorf("a [ without its ]")
		}
		inner := rest[1:end]
		rest = rest[end+1:]
		switch {
		case inner == "":
			path = append(path, segment{append: true})
		case inner[0] >= '0' && inner[0] <= '9':
			i, err := strconv.Atoi(inner)
			if err != nil || i > maxIndex || (len(inner) > 1 && inner[0] == '0') {
				return nil, fmt.Errorf("[%s]: an index is 0 to %d", inner, maxIndex)
			}
			path = append(path, segment{index: i})
		case strings.ContainsAny(inner, "["):
			return nil, fmt.Errorf("[%s: a [ inside brackets", inner)
		default:
			path = append(path, segment{name: inner})
		}
	}
	for _, s := range path[:len(path)-1] {
		if s.append {
			return nil, fmt.Errorf("[] appends, so it comes last (name an element with [0])")
		}
	}
	return path, nil
}

// set stores value at path under root. param is the parameter, for errors.
func set(root map[string]any, path []segment, value any, param string) error {
	var cur any = root
	for i, s := range path {
		last := i == len(path)-1
		next := func() any {
			if last {
				return value
			}
			if path[i+1].name != "" {
				return map[string]any{}
			}
			return []any{}
		}
		switch c := cur.(type) {
		case map[string]any:
			if s.name == "" {
				return fmt.Errorf("-d %q: %s is an object here, not an array", param, describe(path[:i]))
			}
			v, ok := c[s.name]
			if last {
				if ok {
					return fmt.Errorf("-d %q: %s is set twice", param, describe(path[:i+1]))
				}
				c[s.name] = value
				return nil
			}
			if !ok {
				v = next()
				c[s.name] = v
			}
			cur = v
		case []any:
			if s.name != "" {
				return fmt.Errorf("-d %q: %s is an array here, not an object", param, describe(path[:i]))
			}
			if s.append {
				c = append(c, value)
				return replace(root, path[:i], c)
			}
			for len(c) <= s.index {
				c = append(c, nil)
			}
			if c[s.index] == nil {
				c[s.index] = next()
			} else if last {
				return fmt.Errorf("-d %q: %s is set twice", param, describe(path[:i+1]))
			}
			if err := replace(root, path[:i], c); err != nil {
				return err
			}
			cur = c[s.index]
		default:
			return fmt.Errorf("-d %q: %s is a value already, not an object or array", param, describe(path[:i]))
		}
	}
	return nil
}

// replace stores the (grown) slice s at path: appending may have moved it.
func replace(root map[string]any, path []segment, s []any) error {
	var parent any = root
	for i, seg := range path {
		last := i == len(path)-1
		switch p := parent.(type) {
		case map[string]any:
			if last {
				p[seg.name] = s
				return nil
			}
			parent = p[seg.name]
		case []any:
			if last {
				p[seg.index] = s
				return nil
			}
			parent = p[seg.index]
		}
	}
	return fmt.Errorf("body: no parent for %s", describe(path))
}

// describe renders a path as it was written.
func describe(path []segment) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case i == 0:
			b.WriteString(s.name)
		case s.append:
			b.WriteString("[]")
		case s.name != "":
			fmt.Fprintf(&b, "[%s]", s.name)
		default:
			fmt.Fprintf(&b, "[%d]", s.index)
		}
	}
	return b.String()
}

// Encode is the JSON of a body built by Parse, numbers as they were written.
func Encode(v map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
