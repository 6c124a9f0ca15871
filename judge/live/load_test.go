package live_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
)

// discard is a Publisher that keeps only the count and size of what it is
// given; History and Offsets are never asked (no partition is assigned).
type discard struct {
	msgs, bytes int
}

func (p *discard) Publish(_ context.Context, _ string, msgs ...kafka.Message) error {
	p.msgs += len(msgs)
	for i := range msgs {
		p.bytes += len(msgs[i].Value)
	}
	return nil
}

func (p *discard) PartitionEvents(context.Context, string, []int, model.Date, func(*model.Event) error) error {
	return nil
}
func (p *discard) BatchEvents(context.Context, model.BatchKey, func(*model.Event) error) error {
	return nil
}
func (p *discard) Findings(context.Context, model.Date, history.EventsPartitions, func(model.BatchKey) bool, func(*detect.Finding) error) error {
	return nil
}
func (p *discard) Committed(context.Context, string, string, []int) (map[int]int64, error) {
	return nil, nil
}
func (p *discard) Ends(context.Context, string) (map[int]int64, error) { return nil, nil }

// BenchmarkClusterLoad is the load of the local cluster's fault tests in
// one process, without Kafka: the events (HANDOFF_LOAD_EVENTS, default
// 1,000,000) as JSON messages through the runner's Fold, an Advance every
// 2,500 events (as the detectors advanced while catching up), the findings
// encoded as the runner publishes them, with the detector configured as
// `handoff detect` configures it (calendar from yesterday, baselines on).
// It reports events/s, finding records per event and their size, the
// heap the detector holds at the end (after a GC, the messages it read
// excluded) and allocations (HANDOFF_LOAD_HEAPPROFILE=FILE writes the heap
// profile then).
//
//	go test -run '^$' -bench ClusterLoad -benchtime 1x -cpu 1 ./judge/live/
func BenchmarkClusterLoad(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("HANDOFF_LOAD_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("HANDOFF_LOAD_EVENTS=%q: want a number of events", v)
		}
	}
	const every = 2_500
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	events := testenv.RecentEvents(n, "load", 10000, now)
	msgs := make([]kafka.Message, len(events))
	for i := range events {
		msgs[i] = kafka.Message{Key: []byte(events[i].PartitionKey()), Value: events[i].AppendJSON(nil)}
	}
	events = nil
	set, err := contract.NewSet()
	if err != nil {
		b.Fatal(err)
	}
	lo, err := history.BaselineOptions()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	input := ms.HeapAlloc // the messages, not the detector's
	var heap uint64
	var pub discard
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		pub = discard{}
		d, err := detect.New(detect.Config{Contracts: set, From: model.MustParseDate(now.AddDate(0, 0, -1).Format(time.DateOnly)),
			Baselines: &detect.Baselines{Options: lo}})
		if err != nil {
			b.Fatal(err)
		}
		r, err := live.New(live.Settings{EventsTopic: "events", FindingsTopic: "findings", IngestGroup: "i", ResultsGroup: "r"},
			live.Options{Detector: d, History: &pub, Offsets: &pub, Publisher: &pub, Now: func() time.Time { return now }})
		if err != nil {
			b.Fatal(err)
		}
		clock := now
		for i := range msgs {
			if err := r.Fold(ctx, msgs[i]); err != nil {
				b.Fatal(err)
			}
			if i%every == every-1 || i == len(msgs)-1 {
				clock = clock.Add(100 * time.Millisecond)
				if err := r.Advance(ctx, clock, clock); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap = ms.HeapAlloc - input
		if path := os.Getenv("HANDOFF_LOAD_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		runtime.KeepAlive(r)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(pub.msgs)/float64(n), "records/event")
	b.ReportMetric(float64(pub.bytes)/float64(max(pub.msgs, 1)), "B/record")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
}

// writeHeapProfile writes the heap profile to path while the detector is
// alive (-memprofile writes it once the benchmark has returned).
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// recording is a Publisher that copies what it is given (the runner
// reuses the bytes once Publish returns) and records the size of each
// call.
type recording struct {
	discard
	keys, values []string
	calls        []int
}

func (p *recording) Publish(_ context.Context, _ string, msgs ...kafka.Message) error {
	p.calls = append(p.calls, len(msgs))
	for i := range msgs {
		p.keys = append(p.keys, string(msgs[i].Key))
		p.values = append(p.values, string(msgs[i].Value))
	}
	return nil
}

// TestRunnerPublishesInChunks: an advance that raises thousands of
// findings publishes them in chunks of at most 1,000 records, in the order
// and with the bytes the detector's Advance gives for the same events,
// keyed by batch, each chunk's buffer reused only once it was published.
func TestRunnerPublishesInChunks(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	events := testenv.RecentEvents(30_000, "load", 10000, now)
	set, err := contract.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	newDetector := func() *detect.Detector {
		d, err := detect.New(detect.Config{Contracts: set})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := newDetector()
	d := newDetector()
	var pub recording
	r, err := live.New(live.Settings{EventsTopic: "events", FindingsTopic: "findings", IngestGroup: "i", ResultsGroup: "r"},
		live.Options{Detector: d, History: &pub, Offsets: &pub, Publisher: &pub, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range events {
		want.Observe(&events[i])
		if err := r.Fold(ctx, kafka.Message{Value: events[i].AppendJSON(nil)}); err != nil {
			t.Fatal(err)
		}
	}
	fs := want.Advance(now, now)
	if err := r.Advance(ctx, now, now); err != nil {
		t.Fatal(err)
	}
	if len(fs) < 3000 {
		t.Fatalf("%d findings: want thousands, for several chunks", len(fs))
	}
	if len(pub.values) != len(fs) {
		t.Fatalf("published %d records, the detector raised %d", len(pub.values), len(fs))
	}
	for i, n := range pub.calls {
		if n > 1000 || n == 0 {
			t.Fatalf("publish call %d had %d records: want 1 to 1000 (calls %v)", i, n, pub.calls)
		}
	}
	for i := range fs {
		if k := fs[i].Batch.String(); pub.keys[i] != k {
			t.Fatalf("record %d: key %q, want %q", i, pub.keys[i], k)
		}
		if w := string(fs[i].AppendJSON(nil)); pub.values[i] != w {
			t.Fatalf("record %d differs from the detector's:\n got %s\nwant %s", i, pub.values[i], w)
		}
	}
	if _, _, n := r.Progress(); n != int64(len(fs)) {
		t.Fatalf("Progress counts %d published, want %d", n, len(fs))
	}
}
