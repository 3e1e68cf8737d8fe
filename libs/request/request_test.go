package request

import (
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"
)

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		want      url.Values
		wantCode  string
		wantParam string
	}{
		{"", url.Values{}, "", ""},
		{"limit=3&starting_after=we_1", url.Values{"limit": {"3"}, "starting_after": {"we_1"}}, "", ""},
		{"types[]=a&types[]=b", url.Values{"types[]": {"a", "b"}}, "", ""},
		{"types%5B%5D=a&types[]=b", url.Values{"types[]": {"a", "b"}}, "", ""},
		{"q=%C3%A6%F0%9F%8D%BA", url.Values{"q": {"æ🍺"}}, "", ""},
		{"q=%EF%BF%BD", url.Values{"q": {"\uFFFD"}}, "", ""}, // U+FFFD itself is valid text
		{"limit=", url.Values{"limit": {""}}, "", ""},        // empty values are the reader's to judge (listing refuses them)

		// A scalar parameter given twice, whatever its values and however it is encoded.
		{"limit=1&limit=2", nil, apierr.CodeParameterDuplicate, "limit"},
		{"limit=&limit=2", nil, apierr.CodeParameterDuplicate, "limit"},
		{"limit=5&limit=5", nil, apierr.CodeParameterDuplicate, "limit"},
		{"limit=5&%6cimit=5", nil, apierr.CodeParameterDuplicate, "limit"},
		{"created[gte]=1&created%5Bgte%5D=2", nil, apierr.CodeParameterDuplicate, "created[gte]"},
		{"types[0]=a&types[0]=b", nil, apierr.CodeParameterDuplicate, "types[0]"},
		{"b=1&b=2&a=1&a=2", nil, apierr.CodeParameterDuplicate, "a"},

		// Text that is not UTF-8 once decoded.
		{"url=https%3A%2F%2Fa%FF", nil, apierr.CodeParameterInvalid, "url"},
		{"q=%C3", nil, apierr.CodeParameterInvalid, "q"},
		{"q=%ED%A0%80", nil, apierr.CodeParameterInvalid, "q"}, // an encoded surrogate
		{"types[]=a&types[]=%FF", nil, apierr.CodeParameterInvalid, "types[]"},
		{"k%FFey=1", nil, apierr.CodeParameterInvalid, "k\uFFFDey"},
		{"q=\xff", nil, apierr.CodeParameterInvalid, "q"}, // raw bytes, not percent-encoded

		{"%zz", nil, apierr.CodeParameterInvalid, ""},
		{"a=1;b=2", nil, apierr.CodeParameterInvalid, ""},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseQuery(tc.raw)
			if tc.wantCode == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("ParseQuery(%q) = %v, %v; want %v", tc.raw, got, err, tc.want)
				}
				return
			}
			e := apierr.From(err)
			if e == nil || e.Status != 400 || e.Code != tc.wantCode || e.Param != tc.wantParam {
				t.Fatalf("ParseQuery(%q) error = %v; want %s on %q", tc.raw, err, tc.wantCode, tc.wantParam)
			}
		})
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"limit=1&limit=2", "types[]=a&types[]=b", "q=%FF", "%zz", "a=1&b=%C3%A6"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw)
		if err != nil {
			if e := apierr.From(err); e == nil || e.Status != 400 {
				t.Fatalf("non-400 error %v", err)
			}
			return
		}
		for name, vs := range q {
			if !utf8.ValidString(name) || len(vs) > 1 && !strings.HasSuffix(name, "[]") {
				t.Fatalf("accepted %q: %q = %q", raw, name, vs)
			}
			for _, v := range vs {
				if !utf8.ValidString(v) {
					t.Fatalf("accepted %q: %q = %q", raw, name, v)
				}
			}
		}
	})
}

func TestNoQuery(t *testing.T) {
	var got error
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error { got = err; return c.SendStatus(400) }})
	app.Get("/v1/things/:id", NoQuery(func(c *fiber.Ctx) error { return c.SendString("ok") }))
	for _, tc := range []struct {
		query string
		code  string // "" for none: the handler ran
		param string
	}{
		{"", "", ""},
		{"?", "", ""},
		{"?expand=x", "parameter_unknown", "expand"},
		{"?z=1&a=2", "parameter_unknown", "a"},
		{"?limit=1&limit=2", "parameter_duplicate", "limit"},
	} {
		got = nil
		resp, err := app.Test(httptest.NewRequest("GET", "/v1/things/t_1"+tc.query, nil))
		if err != nil {
			t.Fatal(err)
		}
		e := apierr.From(got)
		switch {
		case tc.code == "" && (resp.StatusCode != 200 || got != nil):
			t.Errorf("%q: %d %v, want the handler's answer", tc.query, resp.StatusCode, got)
		case tc.code != "" && (e == nil || e.Code != tc.code || e.Param != tc.param):
			t.Errorf("%q: %v, want %s naming %q", tc.query, got, tc.code, tc.param)
		}
	}
}
