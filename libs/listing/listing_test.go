package listing

import (
	"encoding/json"
	"net/url"
	"testing"

	"rentalplatform/libs/apierr"
)

func TestParse(t *testing.T) {
	spec := Spec{IDPrefix: "we_", Created: true, Filters: []string{"status", "types[]"}}
	i := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		query     string
		want      Params
		wantCode  string
		wantParam string
	}{
		{"", Params{Limit: 10}, "", ""},
		{"limit=1", Params{Limit: 1}, "", ""},
		{"limit=100", Params{Limit: 100}, "", ""},
		{"limit=0", Params{}, apierr.CodeParameterInvalid, "limit"},
		{"limit=101", Params{}, apierr.CodeParameterInvalid, "limit"},
		{"limit=-1", Params{}, apierr.CodeParameterInvalid, "limit"},
		{"limit=ten", Params{}, apierr.CodeParameterInvalid, "limit"},
		{"limit=1.5", Params{}, apierr.CodeParameterInvalid, "limit"},
		{"starting_after=we_abc", Params{Limit: 10, StartingAfter: "we_abc"}, "", ""},
		{"ending_before=we_abc&limit=3", Params{Limit: 3, EndingBefore: "we_abc"}, "", ""},
		{"starting_after=evt_abc", Params{}, apierr.CodeParameterInvalid, "starting_after"},
		{"ending_before=we_", Params{}, apierr.CodeParameterInvalid, "ending_before"},
		{"starting_after=we_a&ending_before=we_b", Params{}, apierr.CodeParametersExclusive, "ending_before"},
		{"created[gte]=10&created[lte]=20", Params{Limit: 10, CreatedGTE: i(10), CreatedLTE: i(20)}, "", ""},
		{"created[gte]=yesterday", Params{}, apierr.CodeParameterInvalid, "created[gte]"},
		{"status=enabled", Params{Limit: 10}, "", ""},
		{"colour=red", Params{}, apierr.CodeParameterUnknown, "colour"},
		{"b=1&a=2", Params{}, apierr.CodeParameterUnknown, "a"},

		// One value each: a repeat is refused even when the values agree, an empty value is
		// never "not given".
		{"limit=", Params{}, apierr.CodeParameterInvalid, "limit"},
		{"limit", Params{}, apierr.CodeParameterInvalid, "limit"},
		{"limit=1&limit=2", Params{}, apierr.CodeParameterDuplicate, "limit"},
		{"limit=5&limit=5", Params{}, apierr.CodeParameterDuplicate, "limit"},
		{"limit=&limit=3", Params{}, apierr.CodeParameterDuplicate, "limit"},
		{"starting_after=", Params{}, apierr.CodeParameterInvalid, "starting_after"},
		{"ending_before=", Params{}, apierr.CodeParameterInvalid, "ending_before"},
		{"starting_after=we_a&starting_after=we_b", Params{}, apierr.CodeParameterDuplicate, "starting_after"},
		{"ending_before=we_a&ending_before=we_a", Params{}, apierr.CodeParameterDuplicate, "ending_before"},
		{"created[gte]=", Params{}, apierr.CodeParameterInvalid, "created[gte]"},
		{"created[lte]=", Params{}, apierr.CodeParameterInvalid, "created[lte]"},
		{"created[gte]=1&created[gte]=2", Params{}, apierr.CodeParameterDuplicate, "created[gte]"},
		{"created[lte]=5&created[gte]=1&created[lte]=9", Params{}, apierr.CodeParameterDuplicate, "created[lte]"},
		{"status=", Params{}, apierr.CodeParameterInvalid, "status"},
		{"status=a&status=b", Params{}, apierr.CodeParameterDuplicate, "status"},
		{"types[]=a&types[]=b", Params{Limit: 10}, "", ""},
		{"types[]=", Params{Limit: 10}, "", ""}, // an array's elements are the operation's to check
		{"limit=1&limit=2&colour=x", Params{}, apierr.CodeParameterUnknown, "colour"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			got, err := Parse(q, spec)
			if tc.wantCode != "" {
				e := apierr.From(err)
				if e == nil || e.Code != tc.wantCode || e.Param != tc.wantParam || e.Status != 400 {
					t.Fatalf("err = %v, want %s on %s", err, tc.wantCode, tc.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Limit != tc.want.Limit || got.StartingAfter != tc.want.StartingAfter || got.EndingBefore != tc.want.EndingBefore ||
				!eq(got.CreatedGTE, tc.want.CreatedGTE) || !eq(got.CreatedLTE, tc.want.CreatedLTE) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCreatedRefusedWhereNotListed(t *testing.T) {
	q, _ := url.ParseQuery("created[gte]=1")
	if e := apierr.From(func() error { _, err := Parse(q, Spec{IDPrefix: "x_"}); return err }()); e == nil || e.Code != apierr.CodeParameterUnknown {
		t.Fatalf("created[gte] accepted by a list that does not filter on it: %v", e)
	}
}

func eq(a, b *int64) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func FuzzParse(f *testing.F) {
	for _, s := range []string{"limit=5", "starting_after=we_1&limit=100", "created[gte]=1&created[lte]=x", "%zz", "limit=&limit=3"} {
		f.Add(s)
	}
	spec := Spec{IDPrefix: "we_", Created: true, Filters: []string{"status", "types[]"}}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p, err := Parse(q, spec)
		if err != nil {
			if e := apierr.From(err); e == nil || e.Status != 400 {
				t.Fatalf("non-400 error %v", err)
			}
			return
		}
		if p.Limit < 1 || p.Limit > MaxLimit {
			t.Fatalf("limit %d escaped validation", p.Limit)
		}
		if p.StartingAfter != "" && p.EndingBefore != "" {
			t.Fatal("both cursors accepted")
		}
		for name, vs := range q {
			if !IsArray(name) && (len(vs) != 1 || vs[0] == "") {
				t.Fatalf("accepted %s = %q: a single value was expected", name, vs)
			}
		}
	})
}

// A list says its mode (spec §2); a list across both modes says none; no data is [], not null.
func TestListLivemode(t *testing.T) {
	for _, tc := range []struct {
		list any
		want string
	}{
		{New("/v1/things", false, []int(nil), false), `{"object":"list","data":[],"has_more":false,"url":"/v1/things","livemode":false}`},
		{New("/v1/things", true, []int{1}, true), `{"object":"list","data":[1],"has_more":true,"url":"/v1/things","livemode":true}`},
		{Across("/admin/things", []int(nil), false), `{"object":"list","data":[],"has_more":false,"url":"/admin/things"}`},
	} {
		b, err := json.Marshal(tc.list)
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s (%v), want %s", b, err, tc.want)
		}
	}
}
