package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// memory is `detectlat memory`: see the package comment.
func memory(args []string) error {
	fs := flag.NewFlagSet("memory", flag.ExitOnError)
	n := fs.Int("batches", 1_000_000, "open batches to hold")
	cpath := fs.String("contracts", "deploy/contracts/account-balance-snapshot.daily.yaml", "contract file or directory (the batches' own pipelines have none: defaults)")
	ref := fs.Float64("ref", 512, "the target, bytes per open batch")
	fs.Parse(args)
	if *n <= 0 {
		return fmt.Errorf("memory: -batches %d: want a positive number", *n)
	}
	dir, name := filepath.Split(filepath.Clean(*cpath))
	set, err := contract.LoadFS(os.DirFS(filepath.Clean(dir+".")), name)
	if err != nil {
		return fmt.Errorf("memory: load the contracts %s: %w", *cpath, err)
	}
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		return err
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rss0 := procStatus("VmRSS")
	started := time.Now()
	batches := gen.NewQuietBatches()
	var dec model.Decoder
	var wire [][]byte
	safe := time.Date(2026, 9, 30, 18, 0, 0, 0, time.UTC)
	advance := func() error {
		if fs := d.Advance(safe, safe); len(fs) != 0 {
			return fmt.Errorf("memory: %d findings: the batches should be in progress", len(fs))
		}
		return nil
	}
	for i := range *n {
		wire = batches.Append(wire[:0], i)
		for _, rec := range wire {
			e, err := dec.Decode(rec)
			if err != nil {
				return fmt.Errorf("memory: decode a generated event: %w", err)
			}
			d.Observe(&e)
		}
		// As the wiring's ticks would: the batches of the tick before
		// last, quiet since, are frozen, so the peak is the detector's
		// working set rather than every batch unfrozen at once.
		if i%advanceEvery == advanceEvery-1 {
			if err := advance(); err != nil {
				return err
			}
		}
	}
	for range 2 {
		if err := advance(); err != nil {
			return err
		}
	}
	folded := time.Since(started)
	wire = nil
	runtime.GC()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	st := d.Stats()
	if st.Open != *n || st.Armed != *n {
		return fmt.Errorf("memory: the detector holds %d open batches, %d armed: want %d each", st.Open, st.Armed, *n)
	}
	rss, hwm := procStatus("VmRSS"), procStatus("VmHWM")
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(*n)
	perRSS := float64(rss-rss0) * 1024 / float64(*n)
	load := loadAvg()
	// Heap in spans minus heap allocated is what the spans the batches
	// live in hold free: the fragmentation between them and the RSS.
	fmt.Printf("memory: %d open batches (%.1f events each) folded and advanced in %.1f s; heap %.0f MiB, %.0f B per open batch (in spans %.0f B); RSS %.0f MiB (%.0f B per open batch over the empty process), peak %.0f MiB\n",
		*n, float64(batches.Events)/float64(*n), folded.Seconds(), float64(after.HeapAlloc)/(1<<20), per,
		float64(after.HeapInuse-before.HeapInuse)/float64(*n), float64(rss)/1024, perRSS, float64(hwm)/1024)
	fmt.Printf("RESULT bench=detect-memory metric=heap_per_open_batch value=%.0f unit=B ref=%.0f ratio=%.2f rss_mib=%.0f load=%s\n", per, *ref, per / *ref, float64(rss)/1024, load)
	fmt.Printf("RESULT bench=detect-memory metric=rss_per_open_batch value=%.0f unit=B ref=%.0f ratio=%.2f rss_mib=%.0f load=%s\n", perRSS, *ref, perRSS / *ref, float64(rss)/1024, load)
	runtime.KeepAlive(d)
	return nil
}

// advanceEvery is how many batches memory folds between two Advances:
// about 75,000 events, a few seconds of a busy topic.
const advanceEvery = 10_000

// procStatus returns a field of /proc/self/status in KiB (0 when absent).
func procStatus(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

// loadAvg is the 1-minute load average.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}
