package validate

import (
	"regexp"
	"testing"
)

var phoneCases = []struct {
	in    string
	valid bool
}{
	{"+4915112345678", true},
	{"+14155552671", true},
	{"+447911123456", true},
	{"+6831234", true},         // Niue: 7 digits, the shortest in service
	{"+123456789012345", true}, // 15 digits, the E.164 maximum
	{"", false},
	{"+", false},
	{"4915112345678", false},
	{"004915112345678", false},
	{"+04915112345678", false},
	{"+49 151 12345678", false},
	{"+49-151-12345678", false},
	{"+49(151)12345678", false},
	{"+49.151.12345678", false},
	{"+123456", false},           // 6 digits
	{"+1234567890123456", false}, // 16 digits
	{"++4915112345678", false},
	{"+4915112345678 ", false},
	{" +4915112345678", false},
	{"+49151123456x8", false},
	{"+４９15112345678", false}, // full-width digits
	{"+٤٩15112345678", false}, // Arabic-Indic digits
	{"tel:+4915112345678", false},
}

func TestPhone(t *testing.T) {
	t.Parallel()
	for _, tc := range phoneCases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			err := Phone("applicant.phone", tc.in)
			if !tc.valid {
				wantErr(t, err, invalidCode, "applicant.phone")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPhoneMessage(t *testing.T) {
	t.Parallel()
	err := Phone("phone", "0151 1234")
	const want = "Invalid phone: expected an E.164 phone number, '+' then country code and number as 7 to 15 digits without spaces or separators (e.g. '+4915112345678'), got '0151 1234'."
	if got := err.Error(); got != "parameter_invalid (param phone): "+want {
		t.Fatalf("got %q", got)
	}
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

func FuzzPhone(f *testing.F) {
	for _, tc := range phoneCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Phone("applicant.phone", s)
		if err != nil {
			fuzzErr(t, err, "applicant.phone")
		}
		if (err == nil) != e164.MatchString(s) {
			t.Fatalf("Phone(%q) = %v, but the E.164 pattern says %v", s, err, e164.MatchString(s))
		}
	})
}
