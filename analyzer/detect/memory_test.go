package detect_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/model"
)

// wireBatches returns the wire JSON of n typical open batches
// (gen.QuietBatches, the batches of the process-level memory run too).
func wireBatches(n int) [][]byte {
	g := gen.NewQuietBatches()
	var out [][]byte
	for i := range n {
		out = g.Append(out, i)
	}
	return out
}

// openBatchBytes decodes and folds the records into a new detector, as the
// wiring does, advances it (each batch is evaluated and its timer armed),
// advances it again with no event in between (the batches have gone quiet:
// their states are compacted) and returns the heap bytes it holds per open
// batch.
func openBatchBytes(tb testing.TB, records [][]byte, batches int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := mustNew(tb, detect.Config{Contracts: seedContracts(tb)})
	var dec model.Decoder
	for _, rec := range records {
		e, err := dec.Decode(rec)
		if err != nil {
			tb.Fatal(err)
		}
		d.Observe(&e)
	}
	safe := at("2026-09-30T18:00:00Z")
	for range 2 {
		if fs := d.Advance(safe, safe); len(fs) != 0 {
			tb.Fatalf("%d findings: the batches should be in progress", len(fs))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if st := d.Stats(); st.Open != batches || st.Armed != batches {
		tb.Fatalf("stats %+v, want %d open and armed", st, batches)
	}
	runtime.KeepAlive(d)
	runtime.KeepAlive(&dec)
	runtime.KeepAlive(records) // counted in before: must not be freed before after
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(batches)
}

// TestOpenBatchMemory holds 20,000 typical open batches, decoded from wire
// JSON, and checks the heap they take: at most 512 bytes each, the target
// (1,000,000 quiet open batches in 512 MiB). It fails when quiet batches
// are not frozen (about 1,220 bytes as compacted replay states) or when a
// frozen batch keeps its events' decoder buffers or its thawed state.
// BenchmarkOpenBatchMemory gives the figure itself.
func TestOpenBatchMemory(t *testing.T) {
	const n, limit = 20_000, 512
	per := openBatchBytes(t, wireBatches(n), n)
	t.Logf("%.0f bytes per open batch", per)
	if per > limit {
		t.Fatalf("%.0f bytes per open batch, want at most %d (docs/detect.md, Memory)", per, limit)
	}
}

// BenchmarkOpenBatchMemory reports the heap bytes per open batch
// (B/open-batch) of 100,000 typical batches of 6 to 9 events. The target
// is at most 512 B (1,000,000 quiet open batches in 512 MiB).
//
//	go test -run '^$' -bench OpenBatchMemory -count 1 ./analyzer/detect/
func BenchmarkOpenBatchMemory(b *testing.B) {
	const n = 100_000
	records := wireBatches(n)
	b.ResetTimer()
	var per float64
	for i := 0; i < b.N; i++ {
		per = openBatchBytes(b, records, n)
	}
	b.ReportMetric(per, "B/open-batch")
	b.ReportMetric(float64(len(records))/n, "events/batch")
}

// BenchmarkStreaming folds 750,000 decoded events (100,000 typical batches)
// in time order and advances after every 20,000 events (a second of
// the 20,000 events/s the detector must follow, docs/performance.md), so that every batch is evaluated as its
// events arrive: the detector's own cost per event, decoding excluded.
//
//	go test -run '^$' -bench Streaming -count 1 ./analyzer/detect/
func BenchmarkStreaming(b *testing.B) {
	events := decodeAll(b, wireBatches(100_000))
	slices.SortStableFunc(events, func(x, y model.Event) int { return x.Time.Compare(y.Time) })
	contracts := seedContracts(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := mustNew(b, detect.Config{Contracts: contracts})
		for j := range events {
			d.Observe(&events[j])
			if j%20_000 == 19_999 || j == len(events)-1 {
				d.Advance(events[j].Time, events[j].Time)
			}
		}
	}
	b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRestoreFold folds the stored history of a takeover into a fresh
// detector, as Runner.Assign does before the restore of the findings:
// the events of the half of 30,000 typical batches it owns (the read
// selects the partitions on the server), in the order a read of the
// events table gives them (a batch's events in a row, its key's text
// shared by the run, as store/history decodes it), with baselines
// learned: the detector's own cost per event of a takeover, the read
// excluded.
//
//	go test -run '^$' -bench RestoreFold -count 6 ./analyzer/detect/
func BenchmarkRestoreFold(b *testing.B) {
	events := decodeAll(b, wireBatches(30_000))
	// The read selects the partitions taken over on the server: only
	// owned batches' events come.
	owns := ownsParity(0)
	events = slices.DeleteFunc(events, func(e model.Event) bool { return !owns(e.Key()) })
	slices.SortStableFunc(events, func(x, y model.Event) int { return x.Key().Compare(y.Key()) })
	for i := 1; i < len(events); i++ {
		if p := &events[i-1]; p.Key() == events[i].Key() {
			events[i].Pipeline, events[i].BatchID = p.Pipeline, p.BatchID
		}
	}
	contracts := seedContracts(b)
	b.ReportAllocs()
	for b.Loop() {
		d := mustNew(b, detect.Config{Contracts: contracts, Owns: owns, Baselines: &detect.Baselines{}})
		d.Floor(events[len(events)-1].Time)
		for j := range events {
			d.Observe(&events[j])
		}
	}
	b.ReportMetric(float64(len(events)), "events")
	b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// decodeAll decodes records, each of which must be valid.
func decodeAll(b *testing.B, records [][]byte) []model.Event {
	events := make([]model.Event, len(records))
	var dec model.Decoder
	for i, rec := range records {
		e, err := dec.Decode(rec)
		if err != nil {
			b.Fatal(err)
		}
		events[i] = e
	}
	return events
}
