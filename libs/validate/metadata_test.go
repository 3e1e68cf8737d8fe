package validate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

const invalidCode = domainerr.CodeParameterInvalid

var metadataEntryCases = []struct {
	name       string
	key, value string
	wantParam  string // "" when valid
}{
	{"plain", "plan", "gold", ""},
	{"empty value unsets", "plan", "", ""},
	{"longest key", strings.Repeat("k", MaxMetadataKeyLen), "v", ""},
	{"longest key in runes", strings.Repeat("ü", MaxMetadataKeyLen), "v", ""},
	{"longest value", "k", strings.Repeat("v", MaxMetadataValueLen), ""},
	{"longest value in runes", "k", strings.Repeat("€", MaxMetadataValueLen), ""},
	{"dots and spaces in key", "order.id no", "1", ""},
	{"empty key", "", "v", "metadata"},
	{"key too long", strings.Repeat("k", MaxMetadataKeyLen+1), "v", "metadata[" + strings.Repeat("k", MaxMetadataKeyLen+1) + "]"},
	{"key with [", "a[b", "v", "metadata[a[b]"},
	{"key with ]", "a]", "v", "metadata[a]]"},
	{"value too long", "plan", strings.Repeat("v", MaxMetadataValueLen+1), "metadata[plan]"},
	{"value too long in runes", "plan", strings.Repeat("€", MaxMetadataValueLen+1), "metadata[plan]"},
	{"NUL in key", "a\x00b", "v", "metadata"},
	{"line feed in key", "a\nb", "v", "metadata"},
	{"C1 in key", "a\u0085", "v", "metadata"},
	{"invalid UTF-8 in key", "a\xff", "v", "metadata"},
	{"NUL in value", "plan", "a\x00b", "metadata[plan]"},
	{"DEL in value", "plan", "a\x7f", "metadata[plan]"},
	{"invalid UTF-8 in value", "plan", "\xc3", "metadata[plan]"},
	{"line breaks and tabs in value", "note", "line 1\r\nline 2\tend", ""},
}

func TestMetadataEntry(t *testing.T) {
	t.Parallel()
	for _, tc := range metadataEntryCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := MetadataEntry("metadata", tc.key, tc.value)
			if tc.wantParam == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, invalidCode, tc.wantParam)
		})
	}
}

func metadataOf(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	full := metadataOf(MaxMetadataKeys)
	full[strings.Repeat("k", MaxMetadataKeyLen)] = strings.Repeat("v", MaxMetadataValueLen)
	delete(full, "k0")
	for _, tc := range []struct {
		name      string
		param     string
		m         map[string]string
		wantParam string
	}{
		{"nil", "metadata", nil, ""},
		{"empty", "metadata", map[string]string{}, ""},
		{"full", "metadata", full, ""},
		{"too many keys", "metadata", metadataOf(MaxMetadataKeys + 1), "metadata"},
		{"too many keys is checked before entries", "metadata", func() map[string]string {
			m := metadataOf(MaxMetadataKeys + 1)
			m[""] = "v"
			return m
		}(), "metadata"},
		{"bad entry", "metadata", map[string]string{"a": "1", "b]": "2"}, "metadata[b]]"},
		// Several bad entries: the first in key order is reported, whatever the map order.
		{"first bad entry in key order", "metadata", map[string]string{
			"z[": "1", "m": strings.Repeat("v", MaxMetadataValueLen+1), "c": "ok", "q]": "2",
		}, "metadata[m]"},
		{"nested param", "requests[3].metadata", map[string]string{"a]": "1"}, "requests[3].metadata[a]]"},
		{"empty key names the hash", "requests[3].metadata", map[string]string{"": "1"}, "requests[3].metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for range 20 { // map order varies between runs; the result must not
				err := Metadata(tc.param, tc.m)
				if tc.wantParam == "" {
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				wantErr(t, err, invalidCode, tc.wantParam)
			}
		})
	}
}

func TestMetadataKeyCount(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, MaxMetadataKeys} {
		if err := MetadataKeyCount("metadata", n); err != nil {
			t.Fatalf("%d keys: %v", n, err)
		}
	}
	err := MetadataKeyCount("metadata", MaxMetadataKeys+1)
	wantErr(t, err, invalidCode, "metadata")
	if msg := err.(*domainerr.Error).Message; msg != "Invalid metadata: must have at most 50 keys, got 51." {
		t.Fatalf("message %q", msg)
	}
}

func FuzzMetadataEntry(f *testing.F) {
	for _, tc := range metadataEntryCases {
		f.Add(tc.key, tc.value)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		err := MetadataEntry("metadata", key, value)
		if err != nil {
			param := "metadata"
			if key != "" && textProblem(key, false) == "" {
				param = "metadata[" + key + "]"
			}
			fuzzErr(t, err, param)
			return
		}
		if key == "" || utf8.RuneCountInString(key) > MaxMetadataKeyLen || strings.ContainsAny(key, "[]") ||
			utf8.RuneCountInString(value) > MaxMetadataValueLen ||
			Text("k", key, MaxMetadataKeyLen, false) != nil || Text("v", value, MaxMetadataValueLen, true) != nil {
			t.Fatalf("accepted key %q value of %d characters", key, utf8.RuneCountInString(value))
		}
	})
}

func TestNewMetadata(t *testing.T) {
	got, err := NewMetadata("metadata", map[string]string{"plan": "pro", "gone": ""})
	if err != nil || len(got) != 1 || got["plan"] != "pro" {
		t.Fatalf("NewMetadata = %v, %v; want only plan=pro", got, err)
	}
	if got, err := NewMetadata("metadata", nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("NewMetadata(nil) = %#v, %v; want an empty, non-nil map", got, err)
	}
	if _, err := NewMetadata("metadata", map[string]string{"a[b]": "x"}); err == nil {
		t.Fatal("NewMetadata accepted a key with brackets")
	}
}
