package validate

import (
	"net/mail"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// maxLocal and maxDomain add up to a 254-character address: 64 + 1 + 189.
var (
	maxLocal  = strings.Repeat("a", 64)
	maxDomain = strings.Repeat("d", 63) + "." + strings.Repeat("d", 63) + "." + strings.Repeat("d", 57) + ".com"
)

var emailCases = []struct {
	in    string
	valid bool
}{
	{"jane.doe@example.com", true},
	{"Jane.Doe+rent@mail.example.co.uk", true},
	{"j_d-1@sub-domain.example.org", true},
	{"o'brien@example.ie", true},
	{"jürgen@bücher.de", true},
	{maxLocal + "@" + maxDomain, true},
	{"", false},
	{maxLocal + "@d" + maxDomain, false}, // 255 characters
	{"jane", false},
	{"jane@", false},
	{"@example.com", false},
	{"jane@example", false},
	{"jane@localhost", false},
	{"jane@example..com", false},
	{"jane@.example.com", false},
	{"jane@example.com.", false},
	{"jane..doe@example.com", false},
	{".jane@example.com", false},
	{"jane@@example.com", false},
	{"jane@doe@example.com", false},
	{"Jane Doe <jane@example.com>", false},
	{"<jane@example.com>", false},
	{"jane@example.com (Jane)", false},
	{"jane(work)@example.com", false},
	{`"jane doe"@example.com`, false},
	{`"jane"@example.com`, false},
	{"jane @example.com", false},
	{"jane@exa mple.com", false},
	{" jane@example.com", false},
	{"jane@example.com\n", false},
	{"jane@example.com\u00a0", false}, // no-break space
	{"jane@[192.0.2.1]", false},
	{"jane@[IPv6:2001:db8::1]", false},
	{"jane@example.com,joe@example.com", false},
	{"jane\x00@example.com", false},
}

func TestEmail(t *testing.T) {
	t.Parallel()
	if n := len(maxLocal + "@" + maxDomain); n != maxEmailLen {
		t.Fatalf("longest case has %d characters", n)
	}
	for _, tc := range emailCases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			err := Email("applicant.email", tc.in)
			if !tc.valid {
				wantErr(t, err, invalidCode, "applicant.email")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func FuzzEmail(f *testing.F) {
	for _, tc := range emailCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Email("applicant.email", s)
		if err != nil {
			fuzzErr(t, err, "applicant.email")
			return
		}
		a, perr := mail.ParseAddress(s)
		if perr != nil || a.Address != s || a.Name != "" || utf8.RuneCountInString(s) > maxEmailLen || strings.ContainsFunc(s, unicode.IsSpace) {
			t.Fatalf("accepted %q", s)
		}
		domain := s[strings.LastIndexByte(s, '@')+1:]
		if !strings.Contains(domain, ".") || strings.Contains(domain, "..") || strings.HasPrefix(domain, ".") ||
			strings.HasSuffix(domain, ".") || strings.HasPrefix(domain, "[") {
			t.Fatalf("accepted %q: domain %q", s, domain)
		}
	})
}
