package validate

import (
	"strings"
	"testing"
)

var currencyCases = []struct {
	in, want string // want "" when refused
}{
	{"eur", "eur"},
	{"EUR", "eur"},
	{"Usd", "usd"},
	{"gbp", "gbp"},
	{"JPY", "jpy"},
	{"chf", "chf"},
	{"xcg", "xcg"},
	{"zwg", "zwg"},
	{"", ""},
	{"usdx", ""},
	{"us", ""},
	{"abc", ""},
	{"eu1", ""},
	{" eur", ""},
	{"eur ", ""},
	{"e r", ""},
	{"ｅｕｒ", ""},      // full-width letters
	{"\u212Aes", ""}, // the Kelvin sign lower-cases to 'k' with strings.ToLower; "kes" is a code
	{"xxx", ""},      // "no currency"
	{"xts", ""},      // reserved for testing
	{"xau", ""},      // gold
	{"xdr", ""},      // special drawing right
	{"usn", ""},      // funds code
	{"bgn", ""},      // replaced by the euro in 2026
	{"hrk", ""},      // replaced by the euro in 2023
	{"ang", ""},      // replaced by xcg in 2025
	{"aed afn", ""},  // two codes of the list
	{"d a", ""},      // spans codes of the list
	{"eur\x00", ""},
	{"\xff\xfe\xfd", ""},
}

func TestCurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range currencyCases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := Currency("requests[3].currency", tc.in)
			if tc.want == "" {
				wantErr(t, err, invalidCode, "requests[3].currency")
				if got != "" {
					t.Fatalf("refused but returned %q", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Currency(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCurrencyMessage(t *testing.T) {
	t.Parallel()
	_, err := Currency("currency", "usdx")
	if got, want := err.Error(), "parameter_invalid (param currency): Invalid currency: 'usdx' is not an ISO 4217 currency code (e.g. 'eur', 'usd')."; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCurrencyCodes(t *testing.T) {
	t.Parallel()
	set := codeSet(t, currencyCodes, 3, false)
	for _, c := range strings.Fields("eur usd gbp jpy chf sek nok dkk pln czk huf ron aud cad nzd cny inr brl mxn zar try") {
		if !set[c] {
			t.Errorf("%s missing", c)
		}
	}
	for _, c := range strings.Fields("xxx xts xau xag xpd xpt xba xbb xbc xbd xdr xsu xua bov che chw clf cou mxv usn uyi uyw ang bgn hrk sll zwl mro std vef byr cuc") {
		if set[c] {
			t.Errorf("%s listed", c)
		}
	}
	// Every code in the list is accepted, in either case.
	for c := range set {
		if got, err := Currency("currency", strings.ToUpper(c)); err != nil || got != c {
			t.Errorf("Currency(%q) = %q, %v", strings.ToUpper(c), got, err)
		}
	}
}

func FuzzCurrency(f *testing.F) {
	for _, tc := range currencyCases {
		f.Add(tc.in)
	}
	set := map[string]bool{}
	for c := range strings.SplitSeq(currencyCodes, " ") {
		set[c] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Currency("currency", s)
		if err != nil {
			fuzzErr(t, err, "currency")
			if isASCII(s) && set[strings.ToLower(s)] {
				t.Fatalf("refused %q, a listed code", s)
			}
			return
		}
		if len(got) != 3 || got != strings.ToLower(got) || !set[got] || len(s) != 3 || !strings.EqualFold(s, got) {
			t.Fatalf("Currency(%q) = %q", s, got)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
