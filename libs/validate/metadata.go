package validate

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Metadata limits. Lengths are in characters (Unicode code points), not bytes.
const (
	MaxMetadataKeys     = 50
	MaxMetadataKeyLen   = 40
	MaxMetadataValueLen = 500
)

// Metadata checks a metadata hash given as param: at most MaxMetadataKeys keys, and every
// entry as MetadataEntry checks it. Entries are checked in key order, so the error reported
// for a hash with several bad entries does not depend on map iteration order.
func Metadata(param string, m map[string]string) error {
	if err := MetadataKeyCount(param, len(m)); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := MetadataEntry(param, k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// MetadataKeyCount checks that a metadata hash of n keys is within MaxMetadataKeys. Callers
// that merge an update into stored metadata check the entries of the update with Metadata or
// MetadataEntry and the count of the merged result with this.
func MetadataKeyCount(param string, n int) error {
	if n > MaxMetadataKeys {
		return invalid(param, "Invalid %s: must have at most %d keys, got %d.", param, MaxMetadataKeys, n)
	}
	return nil
}

// MetadataEntry checks one entry of the metadata hash param. The key must be non-empty, at
// most MaxMetadataKeyLen characters, free of '[' and ']' (which would make the entry's
// parameter name, param[key], ambiguous) and follow Text's single-line rules; the value at
// most MaxMetadataValueLen characters following Text's multi-line rules. An empty value is
// allowed: updates use it to remove a key. Errors name param[key], or param itself for the
// empty key and a key that breaks the text rules.
func MetadataEntry(param, key, value string) error {
	if key == "" {
		return invalid(param, "Invalid %s: keys must not be empty.", param)
	}
	// A key that breaks the text rules is not repeated in the parameter's name, which would
	// carry its control characters into the error.
	if problem := textProblem(key, false); problem != "" {
		return invalid(param, "Invalid %s: keys must %s.", param, problem)
	}
	name := param + "[" + key + "]"
	if n := utf8.RuneCountInString(key); n > MaxMetadataKeyLen {
		return invalid(name, "Invalid %s: keys must be at most %d characters, got %d.", shown(name), MaxMetadataKeyLen, n)
	}
	if strings.ContainsAny(key, "[]") {
		return invalid(name, "Invalid %s: keys must not contain '[' or ']'.", name)
	}
	// Values are multi-line: clients keep notes and small JSON documents in them.
	if problem := textProblem(value, true); problem != "" {
		return invalid(name, "Invalid %s: values must %s.", name, problem)
	}
	if n := utf8.RuneCountInString(value); n > MaxMetadataValueLen {
		return invalid(name, "Invalid %s: values must be at most %d characters, got %d.", name, MaxMetadataValueLen, n)
	}
	return nil
}

// NewMetadata checks the metadata hash of a create (as Metadata) and returns what is stored: a
// key whose value is empty is left out, as an update would remove it. The result is never nil.
func NewMetadata(param string, m map[string]string) (map[string]string, error) {
	if err := Metadata(param, m); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != "" {
			out[k] = v
		}
	}
	return out, nil
}
