package validate

import (
	"strings"
	"testing"
)

var countryCases = []struct {
	in, want string // want "" when refused
}{
	{"DE", "DE"},
	{"de", "DE"},
	{"uS", "US"},
	{"gb", "GB"},
	{"AX", "AX"},
	{"SS", "SS"},
	{"BQ", "BQ"},
	{"", ""},
	{"D", ""},
	{"DEU", ""},
	{"UK", ""}, // exceptionally reserved; the code is GB
	{"EU", ""},
	{"XK", ""}, // user-assigned
	{"AN", ""}, // transitionally reserved
	{"ZZ", ""},
	{"1A", ""},
	{"D ", ""},
	{" D", ""},
	{"ｄｅ", ""},
	{"ſe", ""}, // the long s upper-cases to 'S' with strings.ToUpper; "SE" is a code
	{"B A", ""},
	{"\xff\xfe", ""},
}

func TestCountry(t *testing.T) {
	t.Parallel()
	for _, tc := range countryCases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := Country("address.country", tc.in)
			if tc.want == "" {
				wantErr(t, err, invalidCode, "address.country")
				if got != "" {
					t.Fatalf("refused but returned %q", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Country(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCountryCodes(t *testing.T) {
	t.Parallel()
	set := codeSet(t, countryCodes, 2, true)
	if len(set) != 249 {
		t.Fatalf("%d codes, want the 249 officially assigned", len(set))
	}
	for _, c := range strings.Fields("DE US GB FR NL AT CH SE NO DK PL ES IT IE") {
		if !set[c] {
			t.Errorf("%s missing", c)
		}
	}
	for c := range set {
		if got, err := Country("country", strings.ToLower(c)); err != nil || got != c {
			t.Errorf("Country(%q) = %q, %v", strings.ToLower(c), got, err)
		}
	}
}

func FuzzCountry(f *testing.F) {
	for _, tc := range countryCases {
		f.Add(tc.in)
	}
	set := map[string]bool{}
	for c := range strings.SplitSeq(countryCodes, " ") {
		set[c] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Country("address.country", s)
		if err != nil {
			fuzzErr(t, err, "address.country")
			if isASCII(s) && set[strings.ToUpper(s)] {
				t.Fatalf("refused %q, a listed code", s)
			}
			return
		}
		if len(got) != 2 || got != strings.ToUpper(got) || !set[got] || len(s) != 2 || !strings.EqualFold(s, got) {
			t.Fatalf("Country(%q) = %q", s, got)
		}
	})
}
