package main

import (
	"os"
	"runtime/debug"
)

// Garbage-collector settings of the long-running commands, applied when the
// user has set neither GOGC nor GOMEMLIMIT. They are process-wide, so the
// process (this command) decides them, not a library package.
//
// ingest: most of what it allocates (Kafka messages, decoded columns) lives
// for a batch or two; with GOGC=100 the collector ran several times a batch
// and took ~8% of the machine in the ingest benchmark. diagnose: most of
// what a run allocates stays live until the end. In both, a larger GOGC
// collects less often and the soft limit bounds the peak
// (deploy/bench/README.md). serve: what a request allocates (rows, the
// replay of its batches, the page) is garbage when it is answered.
const (
	ingestGCPercent   = 400
	diagnoseGCPercent = 300
	serveGCPercent    = 400
	softMemoryLimit   = 768 << 20
)

// gcDefaults applies percent and limit unless GOGC or GOMEMLIMIT is set, and
// returns what restores the previous settings (the commands also run
// in-process, in tests).
func gcDefaults(percent int, limit int64) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	oldLimit := debug.SetMemoryLimit(limit)
	oldGC := debug.SetGCPercent(percent)
	return func() {
		debug.SetGCPercent(oldGC)
		debug.SetMemoryLimit(oldLimit)
	}
}
