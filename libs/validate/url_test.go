package validate

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

const testURLMax = 64

var httpsURLCases = []struct {
	in       string
	wantCode string // "" when valid
}{
	{"https://example.com", ""},
	{"https://example.com/webhooks?a=1#f", ""},
	{"HTTPS://Example.COM/Hooks", ""},
	{"https://hooks.example.com:8443/p", ""},
	{"https://192.0.2.1/h", ""},
	{"https://[2001:db8::1]:443/h", ""},
	{"https://bücher.example/ü", ""},
	{"https://example.com/" + strings.Repeat("a", testURLMax-20), ""},                             // exactly the limit
	{"https://example.com/" + strings.Repeat("ü", testURLMax-20), ""},                             // the limit in characters, not bytes
	{"", domainerr.CodeParameterInvalid},                                                          // empty
	{"https://example.com/" + strings.Repeat("a", testURLMax-19), domainerr.CodeParameterInvalid}, // too long
	{"http://" + strings.Repeat("a", testURLMax), domainerr.CodeParameterInvalid},                 // too long beats not https
	{"http://example.com/hooks", domainerr.CodeURLNotHTTPS},
	{"HTTP://example.com", domainerr.CodeURLNotHTTPS},
	{"ftp://example.com", domainerr.CodeURLNotHTTPS},
	{"wss://example.com", domainerr.CodeURLNotHTTPS},
	{"example.com/hooks", domainerr.CodeURLNotHTTPS},
	{"//example.com/hooks", domainerr.CodeURLNotHTTPS},
	{"/hooks", domainerr.CodeURLNotHTTPS},
	{"mailto:jane@example.com", domainerr.CodeURLNotHTTPS},
	{"https:example.com", domainerr.CodeParameterInvalid},
	{"https:///hooks", domainerr.CodeParameterInvalid},
	{"https://", domainerr.CodeParameterInvalid},
	{"https://:443/hooks", domainerr.CodeParameterInvalid},
	{"https://example.com/%zz", domainerr.CodeParameterInvalid},
	{"https://exa mple.com", domainerr.CodeParameterInvalid},
	{"https://example.com\n", domainerr.CodeParameterInvalid},
	{"https://[::1", domainerr.CodeParameterInvalid},
	{"://example.com", domainerr.CodeParameterInvalid},
	{"https://user:pass@example.com", domainerr.CodeURLCredentials},
	{"https://user@example.com/hooks", domainerr.CodeURLCredentials},
	{"https://:pass@example.com", domainerr.CodeURLCredentials},
	{"https://@example.com", domainerr.CodeURLCredentials},
	{"HTTPS://User:P%40ss@Example.com:8443/h?q=1", domainerr.CodeURLCredentials},
	{"https://user:pass@[2001:db8::1]/h", domainerr.CodeURLCredentials},
	{"https://a@b@example.com", domainerr.CodeURLCredentials},
	{"https://example.com/p@th?to=a@b#c@d", ""}, // '@' after the host is no userinfo
	{"http://user:pass@example.com", domainerr.CodeURLNotHTTPS},
}

func TestHTTPSURL(t *testing.T) {
	t.Parallel()
	for _, tc := range httpsURLCases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			err := HTTPSURL("url", tc.in, testURLMax)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, tc.wantCode, "url")
		})
	}
}

func TestHTTPSURLMessages(t *testing.T) {
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
	} {
		if err := HTTPSURL("url", tc.in, tc.maxLen); err == nil || err.Error() != tc.want {
			t.Errorf("HTTPSURL(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzHTTPSURL(f *testing.F) {
	for _, tc := range httpsURLCases {
		f.Add(tc.in)
	}
	const maxLen = 2048
	f.Fuzz(func(t *testing.T, s string) {
		err := HTTPSURL("url", s, maxLen)
		if err != nil {
			fuzzErr(t, err, "url")
			return
		}
		u, perr := url.Parse(s)
		if perr != nil || u.Scheme != "https" || u.Opaque != "" || u.Hostname() == "" || u.User != nil || utf8.RuneCountInString(s) > maxLen {
			t.Fatalf("accepted %q", s)
		}
	})
}
