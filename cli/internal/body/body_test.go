package body

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params []string
		want   string // the JSON, or the error's text after "error: "
	}{
		{"none", nil, "null"},
		{"strings", []string{"url=https://example.com/h?a=b", "description="}, `{"description":"","url":"https://example.com/h?a=b"}`},
		{"typed", []string{"amount:=1250", "livemode:=false", "note:=null", "big:=12345678901234567890"}, `{"amount":1250,"big":12345678901234567890,"livemode":false,"note":null}`},
		{"a number as a string", []string{"reference=00123"}, `{"reference":"00123"}`},
		{"append", []string{"enabled_events[]=a.b", "enabled_events[]=*"}, `{"enabled_events":["a.b","*"]}`},
		{"json array", []string{`enabled_events:=["a.b","*"]`}, `{"enabled_events":["a.b","*"]}`},
		{"nested", []string{"metadata[tenant]=t_1", "metadata[unit]=4b"}, `{"metadata":{"tenant":"t_1","unit":"4b"}}`},
		{"indexed objects", []string{"items[0][amount]:=100", "items[1][amount]:=200", "items[0][label]=rent"}, `{"items":[{"amount":100,"label":"rent"},{"amount":200}]}`},
		{"appended objects", []string{"x[a][]=1", "x[a][]=2"}, `{"x":{"a":["1","2"]}}`},
		{"= in the value", []string{"q=a=b"}, `{"q":"a=b"}`},
		{"no =", []string{"url"}, `error: -d "url": want key=value or key:=json`},
		{"no name", []string{"=x"}, `error: -d "=x": the key has no name`},
		{"bad json", []string{"amount:=12x"}, `error: -d "amount:=12x": the value after := is not JSON`},
		{"two json values", []string{"amount:=1 2"}, `error: -d "amount:=1 2": the value after := is not JSON`},
		{"twice", []string{"a=1", "a=2"}, `error: -d "a=2": a is set twice`},
		{"index twice", []string{"a[0]=1", "a[0]=2"}, `error: -d "a[0]=2": a[0] is set twice`},
		{"object then array", []string{"a[b]=1", "a[]=2"}, `error: -d "a[]=2": a is an object here, not an array`},
		{"array then object", []string{"a[]=1", "a[b]=2"}, `error: -d "a[b]=2": a is an array here, not an object`},
		{"value then object", []string{"a=1", "a[b]=2"}, `error: -d "a[b]=2": a is a value already`},
		{"unclosed", []string{"a[b=1"}, `error: -d "a[b=1": a [ without its ]`},
		{"stray ]", []string{"a]=1"}, `error: -d "a]=1": a ] without its [`},
		{"after ]", []string{"a[b]c=1"}, `error: -d "a[b]c=1": "c" after a ]: want [`},
		{"huge index", []string{"a[100000]=1"}, `error: -d "a[100000]=1": [100000]: an index is 0 to 999`},
		{"leading zero", []string{"a[01]=1"}, `error: -d "a[01]=1": [01]: an index is 0 to 999`},
		{"append not last", []string{"a[][b]=1"}, `error: -d "a[][b]=1": [] appends, so it comes last`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse(tc.params)
			got := ""
			if err != nil {
				got = "error: " + err.Error()
			} else {
				b, err := Encode(v)
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if !strings.HasPrefix(got, tc.want) || (!strings.HasPrefix(tc.want, "error: ") && got != tc.want) {
				t.Fatalf("Parse(%q) = %s\nwant %s", tc.params, got, tc.want)
			}
		})
	}
}

// Whatever the command line holds, Parse returns an error or a body that encodes; it never
// panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a=1", "a[b][0][]=x", "a:=[1,{}]", "a[0][b]:=1", "a[]=1", "x[99]=1"} {
		f.Add(s, "a[1]=2")
	}
	f.Fuzz(func(t *testing.T, p1, p2 string) {
		v, err := Parse([]string{p1, p2})
		if err != nil {
			return
		}
		if _, err := Encode(v); err != nil {
			t.Fatalf("Parse(%q, %q) made a body that does not encode: %v", p1, p2, err)
		}
	})
}
