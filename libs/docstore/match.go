package docstore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A matcher is a query filter compiled for evaluation in Go, over a document's fields as
// doc holds them (a whole stored document, or the fields a queryIndex holds of it). It
// covers the filters this platform's queries use — equality, $ne, $in, $nin, $gt, $gte, $lt,
// $lte and $exists on scalar values (strings, booleans, numbers, dates, null), $and and $or —
// with MongoDB's semantics for them: a missing field equals null, a comparison across types
// matches nothing, an array field matches when one of its elements does. Anything else does
// not compile (errUnmatchable), and the query goes to the store as written.
type matcher func(doc fields) bool

// fields are a document's fields, by dotted path; found is false for a missing one.
type fields interface {
	get(path string) (v bson.RawValue, found bool)
}

// rawDoc is a whole stored document's fields.
type rawDoc bson.Raw

func (r rawDoc) get(path string) (bson.RawValue, bool) {
	v, err := bson.Raw(r).LookupErr(splitPath(path)...)
	return v, err == nil
}

// errUnmatchable: a filter the matcher does not evaluate.
var errUnmatchable = errors.New("not evaluated in memory")

// compileFilter compiles filter; held says which fields the documents it will see carry (nil:
// all of them, a whole document).
func compileFilter(filter bson.D, held func(path string) bool) (matcher, error) {
	var parts []matcher
	for _, e := range filter {
		m, err := compileElem(e, held)
		if err != nil {
			return nil, err
		}
		parts = append(parts, m)
	}
	return func(doc fields) bool {
		for _, m := range parts {
			if !m(doc) {
				return false
			}
		}
		return true
	}, nil
}

func compileElem(e bson.E, held func(string) bool) (matcher, error) {
	switch e.Key {
	case "$and", "$or":
		subs, err := compileList(e.Value, held)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Key, err)
		}
		isOr := e.Key == "$or"
		return func(doc fields) bool {
			for _, m := range subs {
				if m(doc) == isOr {
					return isOr
				}
			}
			return !isOr
		}, nil
	}
	if strings.HasPrefix(e.Key, "$") {
		return nil, fmt.Errorf("%w: operator %s", errUnmatchable, e.Key)
	}
	if held != nil && !held(e.Key) {
		return nil, fmt.Errorf("%w: field %s is not held", errUnmatchable, e.Key)
	}
	path := e.Key
	if ops, ok := operators(e.Value); ok {
		var tests []func(bson.RawValue, bool) bool
		for _, op := range ops {
			t, err := compileOp(op)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			tests = append(tests, t)
		}
		return func(doc fields) bool {
			v, found := doc.get(path)
			for _, t := range tests {
				if !t(v, found) {
					return false
				}
			}
			return true
		}, nil
	}
	want, err := scalar(e.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func(doc fields) bool {
		v, found := doc.get(path)
		return equalsValue(v, found, want)
	}, nil
}

// compileList compiles the filters of a $and or $or.
func compileList(v any, held func(string) bool) ([]matcher, error) {
	raw, err := marshalValue(v)
	if err != nil || raw.Type != bson.TypeArray {
		return nil, fmt.Errorf("%w: not an array of filters", errUnmatchable)
	}
	elems, err := raw.Array().Values()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnmatchable, err)
	}
	var out []matcher
	for _, el := range elems {
		doc, ok := el.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("%w: not a filter", errUnmatchable)
		}
		var d bson.D
		if err := bson.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("%w: %v", errUnmatchable, err)
		}
		m, err := compileFilter(d, held)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty list", errUnmatchable)
	}
	return out, nil
}

// operators returns the operators of a value such as {$gt: 1, $lt: 5}; ok is false for any
// other value (an operand of equality).
func operators(v any) (bson.D, bool) {
	var d bson.D
	switch x := v.(type) {
	case bson.D:
		d = x
	case bson.M:
		for k, val := range x {
			d = append(d, bson.E{Key: k, Value: val})
		}
	default:
		return nil, false
	}
	if len(d) == 0 || !strings.HasPrefix(d[0].Key, "$") {
		return nil, false
	}
	return d, true
}

func compileOp(op bson.E) (func(bson.RawValue, bool) bool, error) {
	switch op.Key {
	case "$eq", "$ne":
		want, err := scalar(op.Value)
		if err != nil {
			return nil, err
		}
		neg := op.Key == "$ne"
		return func(v bson.RawValue, found bool) bool { return equalsValue(v, found, want) != neg }, nil
	case "$in", "$nin":
		raw, err := marshalValue(op.Value)
		if err != nil || raw.Type != bson.TypeArray {
			return nil, fmt.Errorf("%w: %s takes an array", errUnmatchable, op.Key)
		}
		wants, err := raw.Array().Values()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUnmatchable, err)
		}
		for _, w := range wants {
			if !isScalar(w.Type) {
				return nil, fmt.Errorf("%w: %s of a %s", errUnmatchable, op.Key, w.Type)
			}
		}
		neg := op.Key == "$nin"
		return func(v bson.RawValue, found bool) bool {
			for _, w := range wants {
				if equalsValue(v, found, w) {
					return !neg
				}
			}
			return neg
		}, nil
	case "$gt", "$gte", "$lt", "$lte":
		bound, err := scalar(op.Value)
		if err != nil {
			return nil, err
		}
		if bound.Type == bson.TypeNull {
			return nil, fmt.Errorf("%w: %s null", errUnmatchable, op.Key)
		}
		accept := map[string]func(int) bool{
			"$gt":  func(c int) bool { return c > 0 },
			"$gte": func(c int) bool { return c >= 0 },
			"$lt":  func(c int) bool { return c < 0 },
			"$lte": func(c int) bool { return c <= 0 },
		}[op.Key]
		return func(v bson.RawValue, found bool) bool {
			if !found {
				return false
			}
			return anyElement(v, func(x bson.RawValue) bool {
				c, ok := compareValues(x, bound)
				return ok && accept(c)
			})
		}, nil
	case "$exists":
		want, ok := op.Value.(bool)
		if !ok {
			return nil, fmt.Errorf("%w: $exists takes a boolean", errUnmatchable)
		}
		return func(_ bson.RawValue, found bool) bool { return found == want }, nil
	}
	return nil, fmt.Errorf("%w: operator %s", errUnmatchable, op.Key)
}

// scalar encodes an operand of equality or comparison, which must be a scalar.
func scalar(v any) (bson.RawValue, error) {
	raw, err := marshalValue(v)
	if err != nil {
		return raw, fmt.Errorf("%w: %v", errUnmatchable, err)
	}
	if !isScalar(raw.Type) {
		return raw, fmt.Errorf("%w: a %s operand", errUnmatchable, raw.Type)
	}
	return raw, nil
}

func marshalValue(v any) (bson.RawValue, error) {
	if v == nil {
		return bson.RawValue{Type: bson.TypeNull}, nil
	}
	t, data, err := bson.MarshalValue(v)
	if err != nil {
		return bson.RawValue{}, err
	}
	return bson.RawValue{Type: t, Value: data}, nil
}

func isScalar(t bson.Type) bool {
	switch t {
	case bson.TypeString, bson.TypeBoolean, bson.TypeInt32, bson.TypeInt64, bson.TypeDouble,
		bson.TypeDateTime, bson.TypeNull, bson.TypeObjectID:
		return true
	}
	return false
}

// equalsValue is MongoDB's equality of a field (v, found) with a scalar: null matches a
// missing field, an array matches when an element does.
func equalsValue(v bson.RawValue, found bool, want bson.RawValue) bool {
	if !found || v.Type == bson.TypeNull {
		return want.Type == bson.TypeNull
	}
	return anyElement(v, func(x bson.RawValue) bool {
		if x.Type == bson.TypeNull || want.Type == bson.TypeNull {
			return x.Type == want.Type
		}
		c, ok := compareValues(x, want)
		return ok && c == 0
	})
}

// anyElement applies test to v, or to each element when v is an array.
func anyElement(v bson.RawValue, test func(bson.RawValue) bool) bool {
	if v.Type != bson.TypeArray {
		return test(v)
	}
	elems, err := v.Array().Values()
	if err != nil {
		return false
	}
	for _, x := range elems {
		if test(x) {
			return true
		}
	}
	return false
}

// compareValues orders two scalars of one kind (numbers of any width, strings, booleans,
// dates, object ids); ok is false across kinds, which MongoDB's comparisons never match.
func compareValues(a, b bson.RawValue) (c int, ok bool) {
	if an, aok := number(a); aok {
		bn, bok := number(b)
		if !bok {
			return 0, false
		}
		return an.compare(bn), true
	}
	if a.Type != b.Type {
		return 0, false
	}
	switch a.Type {
	case bson.TypeString:
		return strings.Compare(a.StringValue(), b.StringValue()), true
	case bson.TypeBoolean:
		x, y := a.Boolean(), b.Boolean()
		switch {
		case x == y:
			return 0, true
		case !x:
			return -1, true
		}
		return 1, true
	case bson.TypeDateTime:
		return cmp.Compare(a.DateTime(), b.DateTime()), true
	case bson.TypeObjectID:
		x, y := a.ObjectID(), b.ObjectID()
		return bytes.Compare(x[:], y[:]), true
	}
	return 0, false
}

// num is a BSON number: an integer, or a double.
type num struct {
	i     int64
	f     float64
	isInt bool
}

func number(v bson.RawValue) (num, bool) {
	switch v.Type {
	case bson.TypeInt32:
		return num{i: int64(v.Int32()), isInt: true}, true
	case bson.TypeInt64:
		return num{i: v.Int64(), isInt: true}, true
	case bson.TypeDouble:
		return num{f: v.Double()}, true
	}
	return num{}, false
}

func (n num) compare(o num) int {
	if n.isInt && o.isInt {
		return cmp.Compare(n.i, o.i)
	}
	return cmp.Compare(n.float(), o.float())
}

func (n num) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	if math.IsNaN(n.f) {
		return math.Inf(-1) // MongoDB orders NaN below every number
	}
	return n.f
}
