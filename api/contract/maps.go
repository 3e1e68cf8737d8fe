package contract

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// mapNames returns the names of the document's properties whose value is a map (additionalProperties
// a schema, as metadata is, or a free-form object, as previous_attributes is), and of those
// whose value is an array of maps. Strict mode reports every key not named in `properties`,
// and a map's keys are named by no schema (its values are still checked by the schema
// validation): the checker drops those reports (undeclaredInMap).
func mapNames(spec []byte) (maps, arrays map[string]bool) {
	maps, arrays = map[string]bool{}, map[string]bool{}
	var doc any
	if json.Unmarshal(spec, &doc) != nil {
		return maps, arrays
	}
	schemas, _ := dig(doc, "components", "schemas").(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for name, s := range props {
					if isMap(s, schemas, 0) {
						maps[name] = true
					}
					if items := dig(s, "items"); items != nil && isMap(items, schemas, 0) {
						arrays[name] = true
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	return maps, arrays
}

var undeclaredAt = regexp.MustCompile(`property '.*' at '(.*)' is not declared in schema$`)

// undeclaredInMap reports whether e is strict mode's report of a key of a map: its parent is a
// property that maps names as a map, or an element of one that names an array of maps.
func (c *Checker) undeclaredInMap(e *verrors.ValidationError) bool {
	if e.ValidationType != verrors.StrictValidationType || e.ValidationSubType != verrors.StrictSubTypeProperty {
		return false
	}
	m := undeclaredAt.FindStringSubmatch(e.Message)
	if m == nil {
		return false
	}
	parent, _ := cutLast(m[1])
	indexed := false
	if i := strings.LastIndex(parent, "["); i > 0 && strings.HasSuffix(parent, "]") && isDigits(parent[i+1:len(parent)-1]) {
		parent, indexed = parent[:i], true
	}
	_, name := cutLast(parent)
	if indexed {
		return c.arrayMaps[name]
	}
	return c.maps[name]
}

// cutLast splits a JSONPath ($.body.a.b, $.body.a['b.c']) before its last segment and returns
// the parent and that segment's name.
func cutLast(path string) (parent, name string) {
	if strings.HasSuffix(path, "']") {
		if i := strings.LastIndex(path, "['"); i >= 0 {
			return path[:i], path[i+2 : len(path)-2]
		}
	}
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[:i], path[i+1:]
	}
	return "", path
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func isMap(s any, schemas map[string]any, depth int) bool {
	m, ok := s.(map[string]any)
	if !ok || depth > 8 {
		return false
	}
	if ref, ok := m["$ref"].(string); ok {
		return isMap(schemas[strings.TrimPrefix(ref, "#/components/schemas/")], schemas, depth+1)
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := m[k].([]any); ok {
			for _, a := range alts {
				if isMap(a, schemas, depth+1) {
					return true
				}
			}
		}
	}
	if _, ok := m["additionalProperties"].(map[string]any); ok {
		return true
	}
	_, hasProps := m["properties"]
	free := m["additionalProperties"] == nil || m["additionalProperties"] == true
	return isObject(m["type"]) && !hasProps && free
}

func isObject(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
