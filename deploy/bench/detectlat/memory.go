package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
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
	gen := newBatchGen()
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
		wire = gen.batch(i, wire[:0])
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
		*n, gen.events/float64(*n), folded.Seconds(), float64(after.HeapAlloc)/(1<<20), per,
		float64(after.HeapInuse-before.HeapInuse)/float64(*n), float64(rss)/1024, perRSS, float64(hwm)/1024)
	fmt.Printf("RESULT bench=detect-memory metric=heap_per_open_batch value=%.0f unit=B ref=%.0f ratio=%.2f rss_mib=%.0f load=%s\n", per, *ref, per / *ref, float64(rss)/1024, load)
	fmt.Printf("RESULT bench=detect-memory metric=rss_per_open_batch value=%.0f unit=B ref=%.0f ratio=%.2f rss_mib=%.0f load=%s\n", perRSS, *ref, perRSS / *ref, float64(rss)/1024, load)
	runtime.KeepAlive(d)
	return nil
}

// advanceEvery is how many batches memory folds between two Advances:
// about 75,000 events, a few seconds of a busy topic.
const advanceEvery = 10_000

// batchGen makes the wire JSON of typical open batches, as the detector's
// memory test does: 6 to 9 events each, UUID-sized event ids, file names
// and sha256 checksums, over 100 pipelines, all on 2026-09-30 from 17:00Z.
type batchGen struct {
	r      *rand.Rand
	events float64
}

func newBatchGen() *batchGen { return &batchGen{r: rand.New(rand.NewPCG(1, 2))} }

var genTypes = []struct {
	typ model.EventType
	sys model.System
}{
	{model.JobStarted, model.Producer}, {model.ArtifactStaged, model.Producer}, {model.ArtifactFinalized, model.Producer},
	{model.JobSucceeded, model.Producer}, {model.SignalPublished, model.Producer}, {model.ArtifactTransferred, model.Exchange},
	{model.SignalTransferred, model.Exchange}, {model.BatchIdentified, model.Consumer}, {model.ConsumeStarted, model.Consumer},
}

func (g *batchGen) batch(i int, out [][]byte) [][]byte {
	r := g.r
	date := model.MustParseDate("2026-09-30")
	p := fmt.Sprintf("pipeline-%03d.daily", i%100)
	id := fmt.Sprintf("%08d", i)
	k := 6 + r.IntN(4)
	sum := fmt.Sprintf("sha256:%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
	for j := range k {
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48)),
			Type: genTypes[j].typ, Time: date.In(time.UTC).Add(17*time.Hour + time.Duration(j)*time.Minute), Pipeline: p,
			BusinessDate: date, BatchID: id, System: genTypes[j].sys, Component: string(genTypes[j].sys) + "-runner-3"}
		switch {
		case e.Type == model.ArtifactStaged:
			e.Object = "snapshot_" + id + ".csv.tmp"
		case e.Type.IsArtifact():
			e.Object, e.Checksum = "snapshot_"+id+".csv", sum
			e.Bytes, e.HasBytes = 9876543, true
		case e.Type.IsSignal():
			e.Object = "snapshot_" + id + ".flag"
		}
		if e.Type.NeedsRows() {
			e.Rows, e.HasRows = 120345, true
		}
		if e.Type == model.JobStarted || e.Type == model.ConsumeStarted {
			e.Attempt, e.HasAttempt = 1, true
		}
		e.Attrs = map[string]string{"location": "/inbox/finance", "host": "node-17"}
		out = append(out, e.AppendJSON(nil))
	}
	g.events += float64(k)
	return out
}

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
