package validate

import (
	"strings"
	"testing"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

const testTextMax = 10

var textCases = []struct {
	name  string
	in    string
	lines bool
	ok    bool
}{
	{"empty", "", false, true},
	{"plain", "Jane Doe", false, true},
	{"non-ASCII", "Zoë Ünal日本", false, true},
	{"emoji and joiner", "👩\u200d💻", false, true},
	{"bidi mark", "\u200fabc", false, true},
	{"at the limit", strings.Repeat("a", testTextMax), false, true},
	{"at the limit in characters", strings.Repeat("ü", testTextMax), false, true},
	{"over the limit", strings.Repeat("a", testTextMax+1), false, false},
	{"over the limit in characters", strings.Repeat("ü", testTextMax+1), true, false},
	{"NUL", "a\x00b", false, false},
	{"NUL multi-line", "a\x00b", true, false},
	{"U+0001", "\x01", false, false},
	{"ESC", "a\x1b[31m", false, false},
	{"U+001F", "\x1f", false, false},
	{"U+001F multi-line", "\x1f", true, false},
	{"U+0020", " ", false, true},
	{"U+007E", "~", false, true},
	{"DEL", "a\x7f", false, false},
	{"DEL multi-line", "a\x7f", true, false},
	{"U+0080", "a\u0080", false, false},
	{"U+0085 NEL", "a\u0085b", true, false},
	{"U+009F", "\u009f", false, false},
	{"U+00A0", "a\u00a0b", false, true},
	{"tab single-line", "a\tb", false, false},
	{"LF single-line", "a\nb", false, false},
	{"CR single-line", "a\rb", false, false},
	{"tab multi-line", "a\tb", true, true},
	{"LF multi-line", "a\nb", true, true},
	{"CRLF multi-line", "a\r\nb", true, true},
	{"U+2028 single-line", "a\u2028b", false, false},
	{"U+2029 single-line", "a\u2029b", false, false},
	{"U+2028 multi-line", "a\u2028b", true, true},
	{"U+2029 multi-line", "a\u2029b", true, true},
	{"invalid UTF-8", "a\xffb", false, false},
	{"invalid UTF-8 multi-line", "a\xffb", true, false},
	{"truncated sequence", "a\xc3", false, false},
	{"encoded surrogate", "\xed\xa0\x80", false, false},
	{"overlong NUL", "\xc0\x80", false, false},
	{"U+FFFD itself", "a\uFFFDb", false, true},
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, tc := range textCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Text("debtor.name", tc.in, testTextMax, tc.lines)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, domainerr.CodeParameterInvalid, "debtor.name")
		})
	}
}

func TestTextMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		lines bool
		want  string
	}{
		{"ab\x00", false, "Invalid description: must not contain control characters or line breaks; character 3 is U+0000."},
		{"ab\x00", true, "Invalid description: must not contain control characters other than tab, line feed, carriage return and the Unicode line and paragraph separators; character 3 is U+0000."},
		{"ü\xff", false, "Invalid description: must be valid UTF-8; byte 2 is 0xFF."},
		{strings.Repeat("a", 11), false, "Invalid description: must be at most 10 characters, got 11."},
	} {
		err := Text("description", tc.in, testTextMax, tc.lines)
		if e := domainerr.As(err); e == nil || e.Message != tc.want {
			t.Errorf("Text(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestIsControl(t *testing.T) {
	t.Parallel()
	for r := rune(0); r < 0x3000; r++ {
		want := r <= 0x1f || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029
		if IsControl(r) != want {
			t.Fatalf("IsControl(%U) = %v", r, !want)
		}
	}
}

func TestTrimSpace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		lines bool
		want  string
	}{
		{"  Jane \u00a0\u3000", false, "Jane"},
		{"Jane\n", false, "Jane\n"},
		{"\tJane", false, "\tJane"},
		{"Jane\u0085", false, "Jane\u0085"},
		{"Jane\u0085", true, "Jane\u0085"},
		{"Jane\x00 ", false, "Jane\x00"},
		{"\r\n Note\t\n\u2029", true, "Note"},
		{"\u2028Jane", false, "\u2028Jane"},
	} {
		if got := TrimSpace(tc.in, tc.lines); got != tc.want {
			t.Errorf("TrimSpace(%q, %v) = %q, want %q", tc.in, tc.lines, got, tc.want)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, tc := range textCases {
		f.Add(tc.in, tc.lines)
	}
	const maxRunes = 64
	f.Fuzz(func(t *testing.T, s string, lines bool) {
		err := Text("description", s, maxRunes, lines)
		if err != nil {
			fuzzErr(t, err, "description")
			return
		}
		if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxRunes {
			t.Fatalf("accepted %q", s)
		}
		for _, r := range s {
			if IsControl(r) && !(lines && strings.ContainsRune("\t\n\r\u2028\u2029", r)) {
				t.Fatalf("accepted %q with %U (lines %v)", s, r, lines)
			}
		}
		// What a single-line field accepts, a multi-line one accepts too.
		if !lines {
			if err := Text("description", s, maxRunes, true); err != nil {
				t.Fatalf("single-line accepted %q, multi-line refused it: %v", s, err)
			}
		}
	})
}
