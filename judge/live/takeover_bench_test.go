package live_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/judge/live"
	"github.com/handoff-dev/handoff/judge/stream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/schema"
)

// takeoverPartitions is the events topic's partitions on the local
// cluster (deploy/cluster); the benchmark takes over half of them.
const takeoverPartitions = 6

// takeoverFixture is a database holding the cluster's load (testenv's
// recent events, as handoff ingest stores them, each with the partition
// the producers' partitioner gives its key) and the findings one detector
// raised over it, stored as handoff ingest stores them.
type takeoverFixture struct {
	st       *history.Store
	set      *contract.Set
	learn    learn.Options // the baselines' options, as `handoff detect` learns
	now      time.Time
	events   int
	findings int
}

func newTakeoverFixture(b *testing.B, n int) *takeoverFixture {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	b.Cleanup(cancel)
	conn := testenv.ClickHouse(b)
	db, sink, set := storedDatabase(b, "takeover_bench")
	now := time.Now().UTC().Truncate(time.Millisecond)
	events := testenv.RecentEvents(n, "takeover", 10000, now)
	ingested := now.UnixMilli()
	for i := 0; i < len(events); i += 100_000 {
		var batch schema.EventBatch
		for j := i; j < min(i+100_000, len(events)); j++ {
			e := &events[j]
			p := live.Murmur2([]byte(e.PartitionKey()), takeoverPartitions)
			batch.Add(e, schema.Source{Topic: "events", Partition: int32(p), Offset: int64(j)}, ingested)
		}
		if err := sink.InsertEvents(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		b.Fatal(err)
	}
	d.Floor(now)
	for i := range events {
		d.Observe(&events[i])
	}
	var rows schema.FindingRows
	nf := 0
	var failed error
	flush := func() {
		if rows.Len() > 0 && failed == nil {
			failed = sink.InsertColumns(ctx, schema.Findings, schema.FindingColumns, rows.Columns())
		}
		rows = schema.FindingRows{}
	}
	d.AdvanceEach(now, now, func(f *detect.Finding) {
		rows.Add(partitioned(f), schema.Source{Topic: "findings", Partition: 0, Offset: int64(nf)}, ingested)
		if nf++; rows.Len() == 20_000 {
			flush()
		}
	})
	if flush(); failed != nil {
		b.Fatal(failed)
	}
	st, err := history.New(conn, db)
	if err != nil {
		b.Fatal(err)
	}
	lo, err := history.BaselineOptions()
	if err != nil {
		b.Fatal(err)
	}
	return &takeoverFixture{st: st, set: set, learn: lo, now: now, events: len(events), findings: nf}
}

// partitioned is the findings_v2 row of f as handoff ingest stores the
// record the detector published: with its batch's events partition (the
// record's header, schema.EventsPartitionHeader).
func partitioned(f *detect.Finding) schema.FindingRow {
	r := schema.FindingRowOf(f)
	r.EventsPartition = int32(live.Murmur2([]byte(f.Batch.String()), takeoverPartitions))
	r.EventsPartitions = takeoverPartitions
	return r
}

// taken is the partitions the benchmark takes over: half of them.
var taken = []int{0, 1, 2}

func ownsTaken(k model.BatchKey) bool {
	p := live.Murmur2([]byte(k.String()), takeoverPartitions)
	return p < len(taken)
}

// noOffsets is an Offsets with nothing to wait for: the fixture is stored
// before the benchmark starts.
type noOffsets struct{}

func (noOffsets) Committed(context.Context, string, string, []int) (map[int]int64, error) {
	return nil, nil
}
func (noOffsets) Ends(context.Context, string) (map[int]int64, error) { return nil, nil }

// BenchmarkTakeover measures a detector's takeover of half the partitions
// of the local cluster's load (HANDOFF_TAKEOVER_EVENTS, default
// 1,000,000 events stored in a database of its own on the shared
// ClickHouse, with the findings one detector raised over them): the read
// of the partitions' stored history alone (read), the fold of the events
// read into a fresh detector with the restore of their findings (fold),
// the read of the stored findings of the partitions taken over
// (findings), and the whole of
// Runner.Assign as a rebalance runs it (assign, with the heap the detector
// holds after it). The detectors learn baselines, as `handoff detect`
// does by default.
//
//	go test -run '^$' -bench Takeover -benchtime 3x -cpu 1 ./judge/live/
func BenchmarkTakeover(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("HANDOFF_TAKEOVER_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("HANDOFF_TAKEOVER_EVENTS=%q: want a number of events", v)
		}
	}
	fx := newTakeoverFixture(b, n)
	ctx := context.Background()
	from := model.Date{Year: fx.now.Year(), Month: fx.now.Month(), Day: fx.now.Day()}.AddDays(-detect.DefaultRetain)
	var read []model.Event
	if err := fx.st.PartitionEvents(ctx, "events", taken, from, func(e *model.Event) error {
		read = append(read, *e)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	var stored []detect.Finding
	if err := fx.st.Findings(ctx, from, history.EventsPartitions{}, nil, func(f *detect.Finding) error {
		stored = append(stored, *f)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if len(read) < fx.events/3 || len(stored) != fx.findings {
		b.Fatalf("read %d of %d events and %d of %d findings back", len(read), fx.events, len(stored), fx.findings)
	}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuSeconds(b)
		for b.Loop() {
			got := 0
			if err := fx.st.PartitionEvents(ctx, "events", taken, from, func(*model.Event) error { got++; return nil }); err != nil {
				b.Fatal(err)
			}
			if got != len(read) {
				b.Fatalf("read %d events, then %d", len(read), got)
			}
		}
		b.ReportMetric((cpuSeconds(b)-cpu)/float64(b.N), "cpu-s/op")
		b.ReportMetric(float64(len(read))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("fold", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuSeconds(b)
		for b.Loop() {
			d, err := detect.New(detect.Config{Contracts: fx.set, Owns: ownsTaken, Baselines: &detect.Baselines{Options: fx.learn}})
			if err != nil {
				b.Fatal(err)
			}
			d.Floor(fx.now)
			for i := range read {
				d.Observe(&read[i])
			}
			if err := d.Restore(stored...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds(b)-cpu)/float64(b.N), "cpu-s/op")
		b.ReportMetric(float64(len(read))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	ours := 0
	for i := range stored {
		if ownsTaken(stored[i].Batch) {
			ours++
		}
	}
	b.Run("findings", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuSeconds(b)
		for b.Loop() {
			got := 0
			if err := fx.st.Findings(ctx, from, history.EventsPartitions{Take: taken, Count: takeoverPartitions}, ownsTaken,
				func(*detect.Finding) error { got++; return nil }); err != nil {
				b.Fatal(err)
			}
			if got != ours {
				b.Fatalf("read %d findings of the partitions taken, want %d", got, ours)
			}
		}
		b.ReportMetric((cpuSeconds(b)-cpu)/float64(b.N), "cpu-s/op")
		b.ReportMetric(float64(ours)*float64(b.N)/b.Elapsed().Seconds(), "findings/s")
	})
	b.Run("assign", func(b *testing.B) {
		b.ReportAllocs()
		start := map[int]int64{}
		for _, p := range taken {
			start[p] = 0
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		var d *detect.Detector
		cpu := cpuSeconds(b)
		for b.Loop() {
			var err error
			d, err = detect.New(detect.Config{Contracts: fx.set, Baselines: &detect.Baselines{Options: fx.learn}})
			if err != nil {
				b.Fatal(err)
			}
			var pub discard
			r, err := live.New(live.Settings{EventsTopic: "events", FindingsTopic: "findings", IngestGroup: "i", ResultsGroup: "r"},
				live.Options{Detector: d, History: fx.st, Offsets: noOffsets{}, Publisher: &pub, Now: func() time.Time { return fx.now }})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Assign(ctx, stream.Assignment{Start: start, Partitions: takeoverPartitions}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds(b)-cpu)/float64(b.N), "cpu-s/op")
		b.ReportMetric(float64(len(read))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		// What the last detector holds once restored (the events read
		// for the other legs excluded).
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(int64(ms.HeapAlloc)-int64(base))/(1<<20), "heap-MiB")
		runtime.KeepAlive(d)
	})
}

// cpuSeconds is the CPU time (user and system) this process has used: the
// benchmark's figure besides the wall clock, which the server's work and
// the machine's other load are in too.
func cpuSeconds(b *testing.B) float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}
