package events

import "slices"

// APIVersion is the version events are rendered in when their endpoint names none, and the
// API version of every answer. A version is a date; webhook endpoints pin one so a later
// change to an object's shape never breaks a receiver.
const APIVersion = "2026-11-01"

// apiVersions lists every version still rendered, oldest first.
var apiVersions = []string{APIVersion}

// SupportedAPIVersion reports whether v is a version the platform renders.
func SupportedAPIVersion(v string) bool { return slices.Contains(apiVersions, v) }

// APIVersions returns the supported versions, oldest first.
func APIVersions() []string { return slices.Clone(apiVersions) }
