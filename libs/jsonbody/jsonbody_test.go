package jsonbody

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"rentalplatform/libs/apierr"
)

type address struct {
	Line1   string `json:"line1"`
	Country string `json:"country"`
}

type applicant struct {
	Email   string   `json:"email"`
	Address *address `json:"address"`
}

type item struct {
	Amount int64 `json:"amount"`
}

type body struct {
	URL       *string           `json:"url"`
	Events    []string          `json:"enabled_events"`
	Metadata  map[string]string `json:"metadata"`
	Applicant *applicant        `json:"applicant"`
	Requests  []item            `json:"requests"`
	Enabled   *bool             `json:"enabled"`
	Extra     json.RawMessage   `json:"extra"`
	//lint:ignore U1000 present to prove unexported fields are not parameters
	internal string
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		wantCode  string
		wantParam string
	}{
		{"empty body", ``, "", ""},
		{"empty object", `{}`, "", ""},
		{"all fields", `{"url":"https://x","enabled_events":["a.b"],"metadata":{"k":"v"},"applicant":{"email":"e","address":{"line1":"l","country":"NO"}},"requests":[{"amount":5}],"enabled":true,"extra":{"any":[1]}}`, "", ""},
		{"nulls", `{"url":null,"metadata":null,"applicant":{"address":null}}`, "", ""},
		{"integer with .0", `{"requests":[{"amount":5.0}]}`, apierr.CodeParameterInvalid, "requests[0].amount"},
		{"malformed", `{"url":`, apierr.CodeBodyInvalidJSON, ""},
		{"trailing data", `{} {}`, apierr.CodeBodyInvalidJSON, ""},
		{"array body", `[1]`, apierr.CodeBodyInvalidJSON, ""},
		{"string body", `"x"`, apierr.CodeBodyInvalidJSON, ""},
		{"unknown top", `{"colour":"red"}`, apierr.CodeParameterUnknown, "colour"},
		{"unknown nested", `{"applicant":{"email":"e","nickname":"n"}}`, apierr.CodeParameterUnknown, "applicant.nickname"},
		{"unknown deep", `{"applicant":{"address":{"zip":"1"}}}`, apierr.CodeParameterUnknown, "applicant.address.zip"},
		{"unknown in array", `{"requests":[{"amount":1},{"amount":2,"x":1}]}`, apierr.CodeParameterUnknown, "requests[1].x"},
		{"unexported not a param", `{"internal":"x"}`, apierr.CodeParameterUnknown, "internal"},
		{"several unknown, first sorted", `{"zeta":1,"alpha":2}`, apierr.CodeParameterUnknown, "alpha"},
		{"string expected", `{"url":5}`, apierr.CodeParameterInvalid, "url"},
		{"array expected", `{"enabled_events":"a.b"}`, apierr.CodeParameterInvalid, "enabled_events"},
		{"array element", `{"enabled_events":["a",1]}`, apierr.CodeParameterInvalid, "enabled_events[1]"},
		{"map value", `{"metadata":{"k":1}}`, apierr.CodeParameterInvalid, "metadata[k]"},
		{"object expected", `{"applicant":"x"}`, apierr.CodeParameterInvalid, "applicant"},
		{"bool expected", `{"enabled":"true"}`, apierr.CodeParameterInvalid, "enabled"},
		{"integer expected", `{"requests":[{"amount":"5"}]}`, apierr.CodeParameterInvalid, "requests[0].amount"},
		{"fraction", `{"requests":[{"amount":1.5}]}`, apierr.CodeParameterInvalid, "requests[0].amount"},
		{"overflow", `{"requests":[{"amount":1e30}]}`, apierr.CodeParameterInvalid, "requests[0].amount"},

		// A key given twice is refused by its full path, wherever it is.
		{"duplicate top", `{"url":"https://a","url":"https://b"}`, apierr.CodeParameterDuplicate, "url"},
		{"duplicate equal values", `{"enabled":true,"enabled":true}`, apierr.CodeParameterDuplicate, "enabled"},
		{"duplicate nested", `{"applicant":{"email":"a","email":"b"}}`, apierr.CodeParameterDuplicate, "applicant.email"},
		{"duplicate deep", `{"applicant":{"address":{"country":"NO","line1":"x","country":"SE"}}}`, apierr.CodeParameterDuplicate, "applicant.address.country"},
		{"duplicate map entry", `{"metadata":{"plan":"a","team":"b","plan":"c"}}`, apierr.CodeParameterDuplicate, "metadata[plan]"},
		{"duplicate in array element", `{"requests":[{"amount":1},{"amount":2,"amount":3}]}`, apierr.CodeParameterDuplicate, "requests[1].amount"},
		{"duplicate by escape", `{"url":"https://a","\u0075rl":"https://b"}`, apierr.CodeParameterDuplicate, "url"},
		{"duplicate inside raw", `{"extra":{"a":{"b":1,"b":2}}}`, apierr.CodeParameterDuplicate, "extra.a.b"},
		{"duplicate unknown", `{"colour":"red","colour":"blue"}`, apierr.CodeParameterDuplicate, "colour"},
		{"duplicate with null", `{"url":null,"url":"https://b"}`, apierr.CodeParameterDuplicate, "url"},
		{"keys differing in case are not duplicates", `{"metadata":{"Plan":"a","plan":"b"}}`, "", ""},

		// Text that encoding/json would store with U+FFFD in it is refused by name.
		{"invalid UTF-8 value", "{\"url\":\"https://a\xffb\"}", apierr.CodeParameterInvalid, "url"},
		{"truncated UTF-8", "{\"applicant\":{\"email\":\"a\xc3\"}}", apierr.CodeParameterInvalid, "applicant.email"},
		{"overlong UTF-8", "{\"url\":\"\xc0\xaf\"}", apierr.CodeParameterInvalid, "url"},
		{"UTF-8 surrogate", "{\"url\":\"\xed\xa0\x80\"}", apierr.CodeParameterInvalid, "url"},
		{"invalid UTF-8 in map value", "{\"metadata\":{\"k\":\"v\xfe\"}}", apierr.CodeParameterInvalid, "metadata[k]"},
		{"invalid UTF-8 in array", "{\"enabled_events\":[\"a.b\",\"\x80\"]}", apierr.CodeParameterInvalid, "enabled_events[1]"},
		{"invalid UTF-8 in map key", "{\"metadata\":{\"k\xff\":\"v\"}}", apierr.CodeParameterInvalid, "metadata[k\ufffd]"},
		{"invalid UTF-8 in top key", "{\"u\xffrl\":\"v\"}", apierr.CodeParameterInvalid, "u\ufffdrl"},
		{"invalid UTF-8 inside raw", "{\"extra\":[\"\xff\"]}", apierr.CodeParameterInvalid, "extra[0]"},
		{"invalid UTF-8 where an integer goes", "{\"requests\":[{\"amount\":\"\xff\"}]}", apierr.CodeParameterInvalid, "requests[0].amount"},
		{"lone high surrogate escape", `{"url":"a\ud800b"}`, apierr.CodeParameterInvalid, "url"},
		{"lone low surrogate escape", `{"url":"\udc00"}`, apierr.CodeParameterInvalid, "url"},
		{"high surrogate then not low", `{"url":"\ud800\u0041"}`, apierr.CodeParameterInvalid, "url"},
		{"surrogate escape in key", `{"metadata":{"\udfff":"v"}}`, apierr.CodeParameterInvalid, "metadata[\ufffd]"},
		{"surrogate pair is fine", `{"url":"\ud83d\ude00"}`, "", ""},
		{"U+FFFD sent as bytes is fine", "{\"url\":\"\xef\xbf\xbd\"}", "", ""},
		{"U+FFFD sent escaped is fine", `{"url":"\ufffd"}`, "", ""},
		{"multi-byte text is fine", `{"metadata":{"navn":"Ærlig Øl på Åsen 🍺"}}`, "", ""},

		// Syntax the parser must refuse as encoding/json does.
		{"trailing comma", `{"url":"a",}`, apierr.CodeBodyInvalidJSON, ""},
		{"control character in string", "{\"url\":\"a\nb\"}", apierr.CodeBodyInvalidJSON, ""},
		{"bad escape", `{"url":"\x41"}`, apierr.CodeBodyInvalidJSON, ""},
		{"short unicode escape", `{"url":"\u12"}`, apierr.CodeBodyInvalidJSON, ""},
		{"leading zero", `{"requests":[{"amount":01}]}`, apierr.CodeBodyInvalidJSON, ""},
		{"single quotes", `{'url':'a'}`, apierr.CodeBodyInvalidJSON, ""},
		{"unterminated string", `{"url":"a`, apierr.CodeBodyInvalidJSON, ""},
		{"bare word", `{"enabled":tru}`, apierr.CodeBodyInvalidJSON, ""},
		{"too deep", `{"extra":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, apierr.CodeBodyInvalidJSON, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b body
			err := Decode([]byte(tc.in), &b)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			e := apierr.From(err)
			if e == nil || e.Code != tc.wantCode || e.Param != tc.wantParam || e.Status != 400 {
				t.Fatalf("err = %v; want %s on %q", err, tc.wantCode, tc.wantParam)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	var b body
	if err := Decode([]byte(`{"url":"https://a","metadata":{"k":"v"},"requests":[{"amount":7}],"enabled":false}`), &b); err != nil {
		t.Fatal(err)
	}
	if *b.URL != "https://a" || b.Metadata["k"] != "v" || b.Requests[0].Amount != 7 || b.Enabled == nil || *b.Enabled {
		t.Fatalf("decoded %+v", b)
	}
}

// TestParseAgreesWithEncodingJSON: on every body, the parser accepts exactly what
// encoding/json accepts and, where it finds nothing to refuse, reads the same value.
func TestParseAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range parseSeeds {
		agree(t, []byte(in))
	}
}

var parseSeeds = []string{
	`{}`, `[]`, `{"a":[1,-2.5e+3,0,true,false,null,"x"],"b":{"c":{}}}`, `"\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\"`,
	`-0`, `0.0e0`, `1E-2`, `-`, `1.`, `.5`, `01`, `1e`, `+1`, `[1,]`, `{"a" 1}`, `{"a":1 "b":2}`, `nul`,
	`"\ud800"`, `"\ud800\ud800"`, `"\udc00\ud800"`, "\"\xff\"", "\"\xf4\x90\x80\x80\"", "\"a\x00\"",
	`{"a":1,"a":2}`, "\t[ 1 ,\r\n2 ]\n", `[[[[[]]]]]`, `"\u004G"`, `"\uD83D\uDE00"`,
}

// agree checks the parser against encoding/json on one input.
func agree(t *testing.T, in []byte) {
	t.Helper()
	p := parser{data: in}
	p.skipSpace()
	v, err := p.value()
	if err == nil {
		p.skipSpace()
		if p.pos < len(in) {
			err = p.fail("trailing data")
		}
	}
	if ok := json.Valid(in); ok != (err == nil) {
		t.Fatalf("%q: parser error %v, encoding/json valid %v", in, err, ok)
	}
	if err != nil || hasBad(v) {
		return
	}
	var want any
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("%q: encoding/json: %v", in, err)
	}
	if got := plain(v); !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: parser read %#v, encoding/json %#v", in, got, want)
	}
}

// hasBad reports whether the tree holds text the API refuses.
func hasBad(v any) bool {
	switch v := v.(type) {
	case badString:
		return true
	case object:
		for _, m := range v {
			if m.bad || hasBad(m.val) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasBad(e) {
				return true
			}
		}
	}
	return false
}

// plain turns a tree into what encoding/json decodes into `any` (the last repeated key wins).
func plain(v any) any {
	switch v := v.(type) {
	case object:
		m := map[string]any{}
		for _, e := range v {
			m[e.key] = plain(e.val)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(agree)
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"url":"x"}`, `{"applicant":{"address":{"line1":1}}}`, `[`, `{"requests":[{"amount":1e400}]}`,
		`{"url":"a","url":"b"}`, `{"metadata":{"k":"\ud800"}}`, "{\"url\":\"\xff\"}", `{"url":"\ufffd"}`, `{"extra":{"a":1,"a":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var b body
		err := Decode(in, &b)
		if err != nil {
			if e := apierr.From(err); e == nil || e.Status != 400 {
				t.Fatalf("non-400 error: %v", err)
			}
			return
		}
		// Accepted: valid UTF-8, no key twice in any object, and no U+FFFD that was not sent.
		if !utf8.Valid(in) {
			t.Fatalf("accepted invalid UTF-8: %q", in)
		}
		if dup, ok := repeatedKey(in); ok {
			t.Fatalf("accepted %q with the key %q twice in one object", in, dup)
		}
		if hasReplacement(b) && !bytes.Contains(in, []byte("\xef\xbf\xbd")) && !bytes.Contains(bytes.ToLower(in), []byte(`\ufffd`)) {
			t.Fatalf("decoded %q into a value holding U+FFFD that the body did not send", in)
		}
	})
}

// repeatedKey finds a key given twice in one object with encoding/json's tokenizer, which
// owes nothing to the parser under test.
func repeatedKey(in []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(in))
	type frame struct {
		obj    bool
		keys   map[string]bool
		expect bool // the next string token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil { // io.EOF included
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				if top != nil && top.obj {
					top.expect = true
				}
				stack = append(stack, &frame{obj: tok == '{', keys: map[string]bool{}, expect: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.obj && top.expect {
				if top.keys[tok] {
					return tok, true
				}
				top.keys[tok] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.obj {
			top.expect = true
		}
	}
}

// hasReplacement reports whether any string decoded into b holds U+FFFD.
func hasReplacement(b body) bool {
	var strs []string
	if b.URL != nil {
		strs = append(strs, *b.URL)
	}
	strs = append(strs, b.Events...)
	for k, v := range b.Metadata {
		strs = append(strs, k, v)
	}
	if a := b.Applicant; a != nil {
		strs = append(strs, a.Email)
		if a.Address != nil {
			strs = append(strs, a.Address.Line1, a.Address.Country)
		}
	}
	strs = append(strs, string(b.Extra))
	for _, s := range strs {
		if strings.ContainsRune(s, utf8.RuneError) {
			return true
		}
	}
	return false
}
