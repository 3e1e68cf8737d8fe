package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStoreKeepsProfilesOnlyItsOwnerCanRead(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "rental", "config.json")}
	if _, found, err := s.Get("default"); err != nil || found {
		t.Fatalf("no file yet: found %v, %v", found, err)
	}
	if err := s.Put("default", Profile{APIKey: "sk_test_aaaaaaaaaaaa"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("live", Profile{APIKey: "sk_live_bbbbbbbbbbbb"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"default": "sk_test_aaaaaaaaaaaa", "live": "sk_live_bbbbbbbbbbbb"} {
		if p, found, err := s.Get(name); err != nil || !found || p.APIKey != want {
			t.Fatalf("profile %s: %+v %v %v", name, p, found, err)
		}
	}
	info, err := os.Stat(s.Path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v (%v); want 0600", info.Mode().Perm(), err)
	}
	dir, err := os.Stat(filepath.Dir(s.Path))
	if err != nil || dir.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v (%v); want 0700", dir.Mode().Perm(), err)
	}
	if err := os.Chmod(s.Path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get("default"); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a file others can read: %v; want it refused", err)
	}
}

func TestDefaultPath(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"RENTAL_CONFIG_FILE": "/x/c.json", "XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, "/x/c.json"},
		{map[string]string{"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, "/xdg/rental/config.json"},
		{map[string]string{"HOME": "/h"}, "/h/.config/rental/config.json"},
		{map[string]string{}, ""},
	} {
		got, err := DefaultPath(func(k string) string { return tc.env[k] })
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("DefaultPath(%v) = %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}

func TestMask(t *testing.T) {
	for key, want := range map[string]string{
		"sk_test_74UxUrYPxKDc37eSSoLzSW7Ag01irRRFWReZgrpThbM": "sk_test_…ThbM",
		"rk_live_abcdefghijkl":                                "rk_live_…ijkl",
		"sk_test_short":                                       "sk_test_…",
		"whatever-else-0123456789":                            "…6789",
	} {
		if got := Mask(key); got != want {
			t.Errorf("Mask(%q) = %q; want %q", key, got, want)
		}
	}
}
