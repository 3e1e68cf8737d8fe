package stack

import (
	"runtime/debug"

	"rentalplatform/libs/config"
)

// Garbage collection of a process that hosts the embedded MongoDB-compatible store.
//
// FerretDB decodes and re-encodes every document it reads or writes, so the process that embeds
// it allocates at a high rate and, at Go's default GOGC of 100, spends a noticeable share of
// its CPU collecting (about 7 % of the bench process's CPU under the payments benchmark). A
// local stack has memory to spare, so that process trades some of it for CPU: GOGC 400, with a
// soft limit of 2 GiB past which the collector runs as often as it must.
const (
	embeddedGCPercent   = 400
	embeddedMemoryLimit = 2 << 30
)

// TuneEmbeddedGC sets this process's collector for hosting the embedded store, unless
// MONGODB_URI names a real server (nothing is embedded then) or GOGC / GOMEMLIMIT are set
// (the runtime has read them, and they win). Launchers call it from main, before Start: it
// changes the whole process.
func TuneEmbeddedGC(getenv config.Getenv) {
	if getenv("MONGODB_URI") != "" {
		return
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(embeddedGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(embeddedMemoryLimit)
	}
}
