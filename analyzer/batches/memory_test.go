package batches_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/model"
)

// decodedBatch returns the events of one batch of n events as the codec
// decodes them (each event's strings share one allocation of its own,
// attrs included), with a blob of attrs bytes in each.
func decodedBatch(tb testing.TB, dec *model.Decoder, pipeline string, day, n, attrs int) []model.Event {
	tb.Helper()
	d := model.MustParseDate("2020-01-01").AddDays(day)
	types := []model.EventType{model.JobSucceeded, model.ArtifactFinalized, model.SignalPublished,
		model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified, model.ConsumeSucceeded}
	blob := strings.Repeat("x", attrs)
	out := make([]model.Event, 0, n)
	for i := range n {
		typ := types[i%len(types)]
		msg := fmt.Sprintf(`{"spec":"handoff/v1","event_id":"%s-%s-%08d-%02d","type":%q,"time":"%sT20:%02d:00Z",`+
			`"pipeline":%q,"business_date":%q,"batch_id":"%s","system":"producer","component":"host-1",`+
			`"object":"file_%s.csv","rows":10,"attrs":{"blob":%q}}`,
			pipeline, d.Compact(), day, i, typ, d, i%60, pipeline, d, d.Compact(), d.Compact(), blob)
		e, err := dec.Decode([]byte(msg))
		if err != nil {
			tb.Fatalf("event %d of day %d: %v", i, day, err)
		}
		out = append(out, e)
	}
	return out
}

// TestSetKeepsNoEventBuffer: once its events are folded, a Set keeps no
// event's strings alive (a map key made from an event kept that event's
// whole allocation, attrs included, for every batch, for the whole run).
func TestSetKeepsNoEventBuffer(t *testing.T) {
	const batchesN, perBatch = 200, 3
	s := batches.New(contracts{}, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC))
	// Folded in a function of its own, so that nothing but the set and
	// the weak pointers refers to the events afterwards.
	fold := func() []weak.Pointer[byte] {
		var dec model.Decoder
		var ptrs []weak.Pointer[byte]
		for day := range batchesN {
			for _, e := range decodedBatch(t, &dec, "pipe.mem", day, perBatch, 4<<10) {
				ptrs = append(ptrs, weak.Make(unsafe.StringData(e.BatchID)), weak.Make(unsafe.StringData(e.Pipeline)))
				s.Add(&e)
			}
		}
		return ptrs
	}
	ptrs := fold()
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, p := range ptrs {
		if p.Value() != nil {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of %d event strings still reachable after folding: the set keeps the events' allocations alive", alive, len(ptrs))
	}
	// The set still answers for every batch (its keys are its own).
	if got := len(s.Diagnose(nil)); got != batchesN {
		t.Fatalf("%d diagnoses, want %d", got, batchesN)
	}
}

// retainedPerBatch folds batchesN batches of perBatch decoded events into
// a Set and returns the heap the set holds afterwards, per batch.
func retainedPerBatch(tb testing.TB, batchesN, perBatch, attrs int) float64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := batches.New(contracts{}, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC))
	var dec model.Decoder
	for day := range batchesN {
		for _, e := range decodedBatch(tb, &dec, "pipe.mem", day, perBatch, attrs) {
			s.Add(&e)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(batchesN)
}

// TestSetRetainedBytes: what a Set holds per batch once its events are
// folded is about the batch's compacted state, not the room a new state
// keeps for a dozen events nor the events' attrs. The bound is loose
// (about 2.5 times the 580 bytes measured); before the set compacted quiet
// batches and keyed its map with its states' own keys it held 2,800 bytes
// a batch here.
func TestSetRetainedBytes(t *testing.T) {
	got := retainedPerBatch(t, 2000, 3, 1<<10)
	t.Logf("retained %.0f bytes per batch of 3 events", got)
	if got > 1500 {
		t.Errorf("a set holds %.0f bytes per batch of 3 events: want at most 1500 (the compacted state)", got)
	}
}

// BenchmarkSetRetained reports the heap a Set holds per batch after
// folding (retained-B/batch), for batches of 3 and 12 events.
func BenchmarkSetRetained(b *testing.B) {
	for _, n := range []int{3, 12} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			var r float64
			for range b.N {
				r = retainedPerBatch(b, 2000, n, 256)
			}
			b.ReportMetric(r, "retained-B/batch")
		})
	}
}
