// Package jsonbody decodes JSON request bodies the way the public API promises: a body that is
// not a JSON object, a parameter the operation does not take, or a value of the wrong JSON type
// is refused with a 400 naming the parameter by its dotted path (`applicant.email`,
// `requests[3].amount`), before anything is changed.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"rentalplatform/libs/apierr"
)

// Decode parses body into dst, a pointer to a struct whose json tags name the accepted
// parameters. An empty body is an empty object. Fields that must distinguish "absent" from
// "zero" should be pointers; JSON null leaves them nil.
func Decode(body []byte, dst any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return invalidJSON(err)
	}
	if dec.More() {
		return apierr.Invalid(apierr.CodeBodyInvalidJSON, "", "Invalid JSON body: unexpected data after the top-level object.")
	}
	if _, ok := raw.(map[string]any); !ok {
		return apierr.Invalid(apierr.CodeBodyInvalidJSON, "", "Invalid JSON body: the body must be a JSON object.")
	}
	t := reflect.TypeOf(dst)
	if t.Kind() != reflect.Pointer {
		panic("jsonbody.Decode: dst must be a pointer")
	}
	var unknown []string
	if err := check(raw, t.Elem(), "", &unknown); err != nil {
		return err
	}
	if len(unknown) > 0 {
		e := apierr.Unknown(unknown[0])
		if len(unknown) > 1 {
			e.Message = fmt.Sprintf("Received unknown parameters: %s.", strings.Join(unknown, ", "))
		}
		return e
	}
	if err := json.Unmarshal(body, dst); err != nil {
		// check() has already matched every value to its field's kind, so what remains is
		// out-of-range numbers; name the field when the decoder does.
		var te *json.UnmarshalTypeError
		if ok := asTypeError(err, &te); ok {
			return apierr.Invalid(apierr.CodeParameterInvalid, te.Field, fmt.Sprintf("Invalid %s: value out of range.", te.Field))
		}
		return invalidJSON(err)
	}
	return nil
}

func asTypeError(err error, target **json.UnmarshalTypeError) bool {
	te, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*target = te
	}
	return ok
}

func invalidJSON(err error) error {
	return apierr.Invalid(apierr.CodeBodyInvalidJSON, "", "Invalid JSON body: "+strings.TrimPrefix(err.Error(), "json: ")+".")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// check walks a decoded JSON value alongside the Go type it will be decoded into. It appends
// the paths of object keys the type does not have to unknown, and returns the first value whose
// JSON type cannot become the Go type.
func check(v any, t reflect.Type, path string, unknown *[]string) error {
	if v == nil {
		return nil // null: leaves the destination at its zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "an object")
		}
		fields := fieldsOf(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields[k]
			if !ok {
				*unknown = append(*unknown, join(path, k))
				continue
			}
			if err := check(obj[k], f, join(path, k), unknown); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "an object")
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			// A map's entries are named path[key] (metadata[plan]), as form-encoded parameters
			// name them, so a key containing a dot stays unambiguous.
			if err := check(obj[k], t.Elem(), path+"["+k+"]", unknown); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return wrongType(path, "an array")
		}
		for i, e := range arr {
			if err := check(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", unknown); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return wrongType(path, "a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrongType(path, "a boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "an integer")
		}
		// Amounts are integers in the smallest unit: 5.0 and 1e3 are refused like 1.5.
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return wrongType(path, "an integer")
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return wrongType(path, "a number")
		}
	}
	return nil
}

func wrongType(path, want string) error {
	return apierr.Invalid(apierr.CodeParameterInvalid, path, fmt.Sprintf("Invalid %s: expected %s.", path, want))
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// fieldsOf maps JSON names to field types as encoding/json sees them, including the fields of
// embedded structs.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range fieldsOf(et) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
