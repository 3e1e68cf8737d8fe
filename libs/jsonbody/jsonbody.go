// Package jsonbody decodes JSON request bodies the way the public API promises: a body that is
// not a JSON object, a parameter the operation does not take, a value of the wrong JSON type,
// a key given twice in one object (parameter_duplicate) or a string that is not valid UTF-8 is
// refused with a 400 naming the parameter by its dotted path (`applicant.email`,
// `requests[3].amount`, `metadata[plan]`), before anything is changed.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"rentalplatform/libs/apierr"
)

// Decode parses body into dst, a pointer to a struct whose json tags name the accepted
// parameters. An empty body is an empty object. Fields that must distinguish "absent" from
// "zero" should be pointers; JSON null leaves them nil.
//
// Every object in the body, at any depth and inside json.RawMessage and `any` fields too, must
// name each key once, and every string (key or value) must be valid UTF-8 with no \u escape
// of half a surrogate pair: encoding/json would let the last key win and store U+FFFD
// silently, and two readers of one body must never disagree about what it says.
func Decode(body []byte, dst any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	p := parser{data: body}
	raw, err := p.value()
	if err != nil {
		return invalidJSON(err)
	}
	p.skipSpace()
	if p.pos < len(body) {
		return apierr.Invalid(apierr.CodeBodyInvalidJSON, "", "Invalid JSON body: unexpected data after the top-level object.")
	}
	if _, ok := raw.(object); !ok {
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
	// The body has no repeated keys and only valid text, so encoding/json reads it as the
	// parser did.
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

// check walks a parsed JSON value alongside the Go type it will be decoded into. It appends
// the paths of object keys the type does not have to unknown, and returns the first value whose
// JSON type cannot become the Go type, the first key given twice in one object, or the first
// string that is not valid text.
func check(v any, t reflect.Type, path string, unknown *[]string) error {
	if v == nil {
		return nil // null: leaves the destination at its zero value
	}
	if _, bad := v.(badString); bad {
		return invalidText(path)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		// Read later by code that would let a repeated key's last value win, too.
		return checkAny(v, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(object)
		if !ok {
			return wrongType(path, "an object")
		}
		fields := cachedFields(t)
		if err := obj.sortAndCheck(path, join); err != nil {
			return err
		}
		for _, m := range obj {
			f, ok := fields[m.key]
			if !ok {
				*unknown = append(*unknown, join(path, m.key))
				continue
			}
			if err := check(m.val, f, join(path, m.key), unknown); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(object)
		if !ok {
			return wrongType(path, "an object")
		}
		if err := obj.sortAndCheck(path, entry); err != nil {
			return err
		}
		for _, m := range obj {
			if err := check(m.val, t.Elem(), entry(path, m.key), unknown); err != nil {
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

// checkAny checks a value of no particular type (json.RawMessage, any): no key twice in one
// object, only valid text, at any depth.
func checkAny(v any, path string) error {
	switch v := v.(type) {
	case badString:
		return invalidText(path)
	case object:
		if err := v.sortAndCheck(path, join); err != nil {
			return err
		}
		for _, m := range v {
			if err := checkAny(m.val, join(path, m.key)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkAny(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortAndCheck sorts the members by key, so that errors name the first offender in a stable
// order and a repeated key sits next to its twin, and refuses a key that is not valid text or
// is given twice. name makes a member's parameter name from the object's.
func (o object) sortAndCheck(path string, name func(path, key string) string) error {
	slices.SortStableFunc(o, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for i, m := range o {
		if m.bad {
			return apierr.Invalid(apierr.CodeParameterInvalid, name(path, m.key),
				fmt.Sprintf("Invalid parameter name %s: it is not valid UTF-8 text.", name(path, m.key)))
		}
		if i > 0 && o[i-1].key == m.key {
			return duplicate(name(path, m.key))
		}
	}
	return nil
}

// entry names a map's entry by its key in brackets (metadata[plan]), as form-encoded
// parameters name them, so a key containing a dot stays unambiguous.
func entry(path, key string) string { return path + "[" + key + "]" }

func duplicate(param string) error {
	return apierr.Invalid(apierr.CodeParameterDuplicate, param,
		fmt.Sprintf("Received %s more than once: give each parameter once.", param))
}

// invalidText refuses a string that encoding/json would have decoded with U+FFFD in place of
// what was sent: invalid UTF-8, or a \u escape of half a surrogate pair.
func invalidText(param string) error {
	return apierr.Invalid(apierr.CodeParameterInvalid, param,
		fmt.Sprintf("Invalid %s: the value is not valid UTF-8 text (invalid bytes, or a \\u escape of half a surrogate pair).", param))
}

func wrongType(path, want string) error {
	return apierr.Invalid(apierr.CodeParameterInvalid, path, fmt.Sprintf("Invalid %s: expected %s.", path, want))
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// fieldCache holds fieldsOf of every struct type seen: the types are the program's own, so it
// stays small, and reflecting over a type on every request was a fifth of Decode's time.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

func cachedFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f, _ := fieldCache.LoadOrStore(t, fieldsOf(t))
	return f.(map[string]reflect.Type)
}

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
