// Package apiversion names the API versions events can be rendered in. A version is a date;
// webhook endpoints pin one so a later change to an object's shape never breaks a receiver.
package apiversion

import "slices"

// Current is the version new endpoints get when they name none.
const Current = "2026-11-01"

// supported lists every version still rendered, oldest first.
var supported = []string{Current}

// Supported reports whether v is a version the platform renders.
func Supported(v string) bool { return slices.Contains(supported, v) }

// List returns the supported versions, oldest first.
func List() []string { return slices.Clone(supported) }
