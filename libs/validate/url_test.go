package validate

import (
	"strings"
	"testing"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

const testURLMax = 64

var httpsURLCases = []struct {
	in       string
	wantCode string // "" when valid
	want     string // the normal form when valid and not the input
}{
	{"https://example.com", "", ""},
	{"https://example.com/", "", ""},
	{"https://example.com/webhooks?a=1&b=%2F", "", ""},
	{"HTTPS://Example.COM/Hooks?Q=A", "", "https://example.com/Hooks?Q=A"},
	{"hTtPs://example.com", "", "https://example.com"},
	{"https://hooks.example.com:8443/p", "", ""},
	{"https://example.com:1/", "", ""},
	{"https://example.com:65535/", "", ""},
	{"https://192.0.2.1/h", "", ""},
	{"https://[2001:db8::1]:443/h", "", ""},
	{"https://[2001:DB8::1]/h", "", "https://[2001:db8::1]/h"},
	{"https://[::ffff:192.0.2.1]/h", "", ""},
	{"https://xn--bcher-kva.example/%C3%BC", "", ""},
	{"https://my_host.example.com/", "", ""},
	{"https://localhost/", "", ""},
	{"https://a.b-c.d1/", "", ""},
	{"https://example.com/p@th:x/!$&'()*+,;=-._~?q=/?:@", "", ""},
	{"https://example.com?", "", ""},
	{"https://example.com/a/../b", "", ""},
	{"https://example.com/" + strings.Repeat("a", testURLMax-20), "", ""},
	{"", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/" + strings.Repeat("a", testURLMax-19), domainerr.CodeParameterInvalid, ""}, // too long
	{"http://" + strings.Repeat("a", testURLMax), domainerr.CodeParameterInvalid, ""},                 // too long beats not https
	{"http://example.com/hooks", domainerr.CodeURLNotHTTPS, ""},
	{"HTTP://example.com", domainerr.CodeURLNotHTTPS, ""},
	{"ftp://example.com", domainerr.CodeURLNotHTTPS, ""},
	{"wss://example.com", domainerr.CodeURLNotHTTPS, ""},
	{"https+x://example.com", domainerr.CodeURLNotHTTPS, ""},
	{"example.com/hooks", domainerr.CodeURLNotHTTPS, ""},
	{"example.com", domainerr.CodeURLNotHTTPS, ""},
	{"//example.com/hooks", domainerr.CodeURLNotHTTPS, ""},
	{"/hooks", domainerr.CodeURLNotHTTPS, ""},
	{"/a:b", domainerr.CodeURLNotHTTPS, ""},
	{"mailto:jane@example.com", domainerr.CodeURLNotHTTPS, ""},
	{"://example.com", domainerr.CodeParameterInvalid, ""},
	{"1https://example.com", domainerr.CodeParameterInvalid, ""},
	{"ht_tps://example.com", domainerr.CodeParameterInvalid, ""},
	{"https:example.com", domainerr.CodeParameterInvalid, ""},
	{"https:/example.com", domainerr.CodeParameterInvalid, ""},
	{"https:///hooks", domainerr.CodeParameterInvalid, ""},
	{"https://", domainerr.CodeParameterInvalid, ""},
	{"https://?q", domainerr.CodeParameterInvalid, ""},
	{"https://:443/hooks", domainerr.CodeParameterInvalid, ""},
	// characters
	{"https://exa mple.com", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/a b", domainerr.CodeParameterInvalid, ""},
	{"https://example.com\n", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/\x00", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/\x7f", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/\u0085", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/\xff", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/ü", domainerr.CodeParameterInvalid, ""},
	{"https://bücher.example/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com\\@evil.example/", domainerr.CodeURLCredentials, ""},
	{"https://example.com/a\\b", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/a\"b", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/<x>", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/{x}", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/a|b", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/a^b", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/a`b", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/[x]", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/?q=[x]", domainerr.CodeParameterInvalid, ""},
	// percent-encoding
	{"https://example.com/%zz", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/%4", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/%", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/?q=%G0", domainerr.CodeParameterInvalid, ""},
	{"https://example.com/?q=100%", domainerr.CodeParameterInvalid, ""},
	{"https://ex%61mple.com/", domainerr.CodeParameterInvalid, ""},
	// hosts
	{"https://[::1", domainerr.CodeParameterInvalid, ""},
	{"https://[::1]x/", domainerr.CodeParameterInvalid, ""},
	{"https://[192.0.2.1]/", domainerr.CodeParameterInvalid, ""},
	{"https://[fe80::1%25eth0]/", domainerr.CodeParameterInvalid, ""},
	{"https://[v1.x]/", domainerr.CodeParameterInvalid, ""},
	{"https://exa[mple.com/", domainerr.CodeParameterInvalid, ""},
	{"https://example..com/", domainerr.CodeParameterInvalid, ""},
	{"https://.example.com/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com./", domainerr.CodeParameterInvalid, ""},
	{"https://-example.com/", domainerr.CodeParameterInvalid, ""},
	{"https://example-.com/", domainerr.CodeParameterInvalid, ""},
	{"https://" + strings.Repeat("a", 64) + ".com/", domainerr.CodeParameterInvalid, ""},
	{"https://exa!mple.com/", domainerr.CodeParameterInvalid, ""},
	{"https://2130706433/", domainerr.CodeParameterInvalid, ""},
	{"https://0x7f.1/", domainerr.CodeParameterInvalid, ""},
	{"https://010.0.0.1/", domainerr.CodeParameterInvalid, ""},
	{"https://256.0.0.1/", domainerr.CodeParameterInvalid, ""},
	{"https://1.2.3/", domainerr.CodeParameterInvalid, ""},
	// ports
	{"https://example.com:/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com:0/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com:0443/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com:65536/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com:99999/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com:https/", domainerr.CodeParameterInvalid, ""},
	{"https://example.com:443:1/", domainerr.CodeParameterInvalid, ""},
	{"https://[::1]:/", domainerr.CodeParameterInvalid, ""},
	// fragments
	{"https://example.com/webhooks?a=1#f", domainerr.CodeParameterInvalid, ""},
	{"https://example.com#", domainerr.CodeParameterInvalid, ""},
	// credentials
	{"https://user:pass@example.com", domainerr.CodeURLCredentials, ""},
	{"https://user@example.com/hooks", domainerr.CodeURLCredentials, ""},
	{"https://:pass@example.com", domainerr.CodeURLCredentials, ""},
	{"https://@example.com", domainerr.CodeURLCredentials, ""},
	{"HTTPS://User:P%40ss@Example.com:8443/h?q=1", domainerr.CodeURLCredentials, ""},
	{"https://user:pass@[2001:db8::1]/h", domainerr.CodeURLCredentials, ""},
	{"https://a@b@example.com", domainerr.CodeURLCredentials, ""},
	{"https://example.com/p@th?to=a@b", "", ""}, // '@' after the host is no userinfo
	{"http://user:pass@example.com", domainerr.CodeURLNotHTTPS, ""},
}

func TestParseHTTPSURL(t *testing.T) {
	t.Parallel()
	for _, tc := range httpsURLCases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			u, err := ParseHTTPSURL("webhook_url", tc.in, testURLMax)
			if tc.wantCode != "" {
				wantErr(t, err, tc.wantCode, "webhook_url")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if u.String() != want {
				t.Fatalf("normal form %q, want %q", u.String(), want)
			}
		})
	}
}

func TestParseHTTPSURLMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		maxLen int
		want   string
	}{
		{"http://example.com", 64, "url_not_https (param url): Invalid url: must use https://."},
		{"https://jane:s3cret@example.com", 64, "url_credentials_not_allowed (param url): Invalid url: must not contain a user name or password ('user:password@' before the host): the URL is shown in every read of the object."},
		{"", 64, "parameter_invalid (param url): Invalid url: must not be empty."},
		{"https://example.com", 10, "parameter_invalid (param url): Invalid url: must be at most 10 characters, got 19."},
		{"https:///hooks", 64, "parameter_invalid (param url): Invalid url: expected an absolute URL with a host like 'https://example.com/webhooks', got 'https:///hooks'."},
		{"https://example.com/a b", 64, "parameter_invalid (param url): Invalid url: must be printable ASCII without spaces (percent-encode other characters, write an international domain name in its xn-- form); character 22 is U+0020."},
		{"https://example..com", 64, "parameter_invalid (param url): Invalid url: 'example..com' is not a valid host: expected a domain name (international ones in their xn-- form), an IPv4 address or an IPv6 address in brackets."},
		{"https://example.com:0", 64, "parameter_invalid (param url): Invalid url: the port must be a number from 1 to 65535, got '0'."},
		{"https://example.com/#top", 64, "parameter_invalid (param url): Invalid url: must not contain a fragment ('#top'): it is never sent to the server."},
		{"https://example.com/%zz", 64, "parameter_invalid (param url): Invalid url: '%' must start a percent-encoding of two hexadecimal digits, got '%zz' in the path."},
		{"https://example.com/?a|b", 64, "parameter_invalid (param url): Invalid url: '|' must be percent-encoded in the query."},
	} {
		if _, err := ParseHTTPSURL("url", tc.in, tc.maxLen); err == nil || err.Error() != tc.want {
			t.Errorf("ParseHTTPSURL(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseHTTPSURL: the parser never panics, refuses only with the package's errors, and what
// it accepts is stored in a normal form that is itself accepted, unchanged.
func FuzzParseHTTPSURL(f *testing.F) {
	for _, tc := range httpsURLCases {
		f.Add(tc.in)
	}
	const maxLen = 2048
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseHTTPSURL("url", s, maxLen)
		if err != nil {
			fuzzErr(t, err, "url")
			return
		}
		norm := u.String()
		if u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" ||
			utf8.RuneCountInString(s) > maxLen || !strings.EqualFold(norm, s) {
			t.Fatalf("accepted %q as %q", s, norm)
		}
		again, err := ParseHTTPSURL("url", norm, maxLen)
		if err != nil {
			t.Fatalf("accepted %q, refused its normal form %q: %v", s, norm, err)
		}
		if again.String() != norm || *again != *u {
			t.Fatalf("normal form %q parses to %#v, was %#v", norm, again, u)
		}
	})
}
