package validate

import (
	"strings"
	"testing"

	"rentalplatform/libs/domainerr"
)

// wantErr fails unless err is a *domainerr.Error of kind Invalid with code and param, whose
// message starts "Invalid <param>:".
func wantErr(t *testing.T, err error, code, param string) {
	t.Helper()
	e, ok := err.(*domainerr.Error)
	if !ok {
		t.Fatalf("err = %#v, want *domainerr.Error %s on %s", err, code, param)
	}
	if e.Kind != domainerr.Invalid || e.Code != code || e.Param != param {
		t.Fatalf("err = %v (kind %d), want %s on %s", e, e.Kind, code, param)
	}
	if !strings.HasPrefix(e.Message, "Invalid "+shown(param)+":") {
		t.Fatalf("message %q does not start with %q", e.Message, "Invalid "+param+":")
	}
}

// fuzzErr fails unless err is a *domainerr.Error of kind Invalid naming param, with one of
// the package's two codes.
func fuzzErr(t *testing.T, err error, param string) {
	t.Helper()
	e, ok := err.(*domainerr.Error)
	if !ok {
		t.Fatalf("err = %#v, want *domainerr.Error", err)
	}
	if e.Kind != domainerr.Invalid || e.Param != param ||
		(e.Code != domainerr.CodeParameterInvalid && e.Code != domainerr.CodeURLNotHTTPS && e.Code != domainerr.CodeURLCredentials) {
		t.Fatalf("err = %v (kind %d), want an Invalid error on %q", e, e.Kind, param)
	}
	if !strings.HasPrefix(e.Message, "Invalid "+shown(param)+":") {
		t.Fatalf("message %q does not start with %q", e.Message, "Invalid "+param+":")
	}
}

// codeSet checks that list is single-space separated, sorted and free of repeats, every code
// n letters of one case, and returns its codes.
func codeSet(t *testing.T, list string, n int, upper bool) map[string]bool {
	t.Helper()
	codes := strings.Split(list, " ")
	set := make(map[string]bool, len(codes))
	for i, c := range codes {
		if got, ok := asciiLetters(c, n, upper); !ok || got != c {
			t.Fatalf("code %d %q is not %d letters of the list's case", i, c, n)
		}
		if i > 0 && codes[i-1] >= c {
			t.Fatalf("codes out of order or repeated: %q then %q", codes[i-1], c)
		}
		set[c] = true
	}
	return set
}

func TestShown(t *testing.T) {
	t.Parallel()
	if got := shown("abc"); got != "abc" {
		t.Fatalf("shown(abc) = %q", got)
	}
	long := strings.Repeat("é", maxShown+1)
	if got := shown(long); got != strings.Repeat("é", maxShown)+"..." {
		t.Fatalf("shown(long) = %q", got)
	}
	if got := shown(strings.Repeat("é", maxShown)); got != strings.Repeat("é", maxShown) {
		t.Fatalf("shown(exactly max) = %q", got)
	}
}
