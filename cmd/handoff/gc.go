package main

import (
	"context"
	"os"
	"runtime/debug"
	"time"

	"github.com/handoff-dev/handoff/internal/cliflag"
	"github.com/handoff-dev/handoff/internal/memlimit"
)

// Garbage-collector settings of the long-running commands, applied when the
// user has set neither GOGC nor GOMEMLIMIT. They are process-wide, so the
// process (this command) decides them, not a library package.
//
// ingest: its batches are a few large pointer-free arrays, recycled, and
// it allocates little per event (its fetch responses are recycled too), so
// collections are cheap: GOGC=60 keeps the peak near 1.6 times what is
// live (~110-125 MB in the benchmark: 226-233 MiB RSS, against 250-280
// with Go's GOGC=100, for a few more collections and no CPU seen in the
// benchmark's figures); the soft limit leaves room for what
// HANDOFF_BATCH_BYTES lets it hold with large events (ingestMemoryLimit). diagnose: most of what a
// run allocates stays live until the end: a larger GOGC collects less
// often and the soft limit bounds the peak (deploy/bench/README.md).
// detect: what it holds is its open batches, packed when quiet and
// long-lived; Go's GOGC=100 lets the heap reach twice that between
// collections while they are folded (931 MiB for 1,000,000 batches that
// hold 400 MiB), and the soft limit keeps the peak near what is live.
// serve: what a request allocates (rows, the replay of its batches, the
// page) is garbage when it is answered.
const (
	ingestGCPercent   = 60
	diagnoseGCPercent = 300
	serveGCPercent    = 400
	detectGCPercent   = 100
	softMemoryLimit   = 768 << 20
)

// ingestMemoryLimit is the ingester's soft memory limit for batchBytes
// (HANDOFF_BATCH_BYTES): the in-flight bound, 4 batches of message bytes
// (consumer.inFlightBatches), plus 64 MiB for the rest, and at least
// 256 MiB. Below what the ingester must hold, a soft limit makes the
// collector run without end.
func ingestMemoryLimit(batchBytes int64) int64 {
	return max(256<<20, 4*batchBytes+64<<20)
}

// gcDefaults applies percent and limit unless GOGC or GOMEMLIMIT is set, and
// returns what restores the previous settings (the commands also run
// in-process, in tests). The limit is a floor, not a ceiling: until ctx
// ends or restore is called, it rises with the live heap (memlimit), so a
// process holding more than it was sized for (a detector folding 400,000
// events used three times the CPU under a 256 MiB limit) collects as
// often as it needs to, not back to back.
func gcDefaults(ctx context.Context, percent int, limit int64) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	oldLimit := debug.SetMemoryLimit(limit)
	oldGC := debug.SetGCPercent(percent)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		memlimit.New(limit, limitHeadroom).Run(ctx, limitEvery)
	}()
	return func() {
		cancel()
		<-done
		debug.SetGCPercent(oldGC)
		debug.SetMemoryLimit(oldLimit)
	}
}

// limitHeadroom and limitEvery: past the floor, the heap may grow by half
// of what is live before the limit makes the collector run (GOGC=50's
// pace, rather than back to back), checked every second.
const (
	limitHeadroom = 0.5
	limitEvery    = time.Second
)

// cpuProfileTo starts a CPU profile written to path (nothing when path is
// empty) and returns what stops it and closes the file (cliflag's one
// implementation; a bad path is a usage error).
func cpuProfileTo(path string) (stop func() error, err error) {
	stop, err = cliflag.StartCPUProfile(path)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return stop, nil
}
