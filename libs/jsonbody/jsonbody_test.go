package jsonbody

import (
	"encoding/json"
	"testing"

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

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"url":"x"}`, `{"applicant":{"address":{"line1":1}}}`, `[`, `{"requests":[{"amount":1e400}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var b body
		err := Decode(in, &b)
		if err != nil {
			if e := apierr.From(err); e == nil || e.Status != 400 {
				t.Fatalf("non-400 error: %v", err)
			}
		}
	})
}
