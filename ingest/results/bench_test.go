package results

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/schema"
)

// clusterRecords returns the finding records the detector writes for n
// generated events spread as the local cluster's fault tests spread them
// (deploy/cluster: pipelines of the default contract, the last five
// business dates, events over four days): the detector observes them in
// time order and advances every ten minutes, so the records are first
// open records, updates of open ones and resolutions.
func clusterRecords(tb testing.TB, n int) [][]byte {
	tb.Helper()
	now := time.Date(2026, 10, 6, 12, 0, 0, 0, time.UTC)
	events := testenv.RecentEvents(n, "bench", 200, now)
	slices.SortStableFunc(events, func(a, b model.Event) int { return a.Time.Compare(b.Time) })
	set, err := contract.NewSet()
	if err != nil {
		tb.Fatal(err)
	}
	d, err := detect.New(detect.Config{Contracts: set})
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	var open, updated, resolved int
	for safe := now.Add(-96 * time.Hour); !safe.After(now); safe = safe.Add(10 * time.Minute) {
		for len(events) > 0 && !events[0].Time.After(safe) {
			d.Observe(&events[0])
			events = events[1:]
		}
		for _, f := range d.Advance(safe.Add(time.Second), safe) {
			switch {
			case f.State == detect.Resolved:
				resolved++
			case f.Seq == 1:
				open++
			default:
				updated++
			}
			out = append(out, f.AppendJSON(nil))
		}
	}
	tb.Logf("%d records: %d first open, %d updated, %d resolved", len(out), open, updated, resolved)
	if open == 0 || updated == 0 || resolved == 0 {
		tb.Fatalf("records: %d first open, %d updated, %d resolved: want some of each", open, updated, resolved)
	}
	return out
}

var benchCache struct {
	once sync.Once
	recs [][]byte
}

// benchRecords returns the records of clusterRecords in a fixed shuffled
// order, so that the first records of a short run are a sample of all.
func benchRecords(b *testing.B) [][]byte {
	benchCache.once.Do(func() {
		recs := clusterRecords(b, 20000)
		rand.New(rand.NewPCG(1, 1)).Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		benchCache.recs = recs
	})
	recs := benchCache.recs
	var n int
	for _, r := range recs {
		n += len(r)
	}
	b.SetBytes(int64(n / len(recs)))
	b.ReportAllocs()
	b.ResetTimer()
	return recs
}

// BenchmarkParseFinding is the results consumer's work per finding
// record: decode, check and build its findings_v2 row. One op is one
// record.
func BenchmarkParseFinding(b *testing.B) {
	if err := storeParse(benchRecords(b), b.N); err != nil {
		b.Fatal(err)
	}
}

// storeParse, detectParse, rowsOf and storeRows are the measured loops,
// apart from the generation so that an instruction count can be limited
// to them (valgrind --tool=cachegrind --toggle-collect='*storeParse').
//
//go:noinline
func storeParse(recs [][]byte, n int) error {
	for i := 0; i < n; i++ {
		if _, err := ParseFinding(recs[i%len(recs)]); err != nil {
			return err
		}
	}
	return nil
}

//go:noinline
func detectParse(recs [][]byte, n int) error {
	for i := 0; i < n; i++ {
		if _, err := detect.ParseFinding(recs[i%len(recs)]); err != nil {
			return err
		}
	}
	return nil
}

//go:noinline
func rowsOf(fs []detect.Finding, n int) {
	for i := 0; i < n; i++ {
		_ = schema.FindingRowOf(&fs[i%len(fs)])
	}
}

//go:noinline
func storeRows(recs [][]byte, n int) error {
	var rows schema.FindingRows
	for i := 0; i < n; i++ {
		r, err := ParseFinding(recs[i%len(recs)])
		if err != nil {
			return err
		}
		rows.Add(r, schema.Source{Topic: "findings", Offset: int64(i)}, 1)
		if rows.Len() == 500 {
			_ = rows.Columns()
			rows = schema.FindingRows{}
		}
	}
	return nil
}

// BenchmarkDetectParseFinding is the decoder alone (detect.ParseFinding)
// over the same records.
func BenchmarkDetectParseFinding(b *testing.B) {
	if err := detectParse(benchRecords(b), b.N); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFindingRowOf is the row encoder alone over the decoded
// records.
func BenchmarkFindingRowOf(b *testing.B) {
	recs := benchRecords(b)
	fs := make([]detect.Finding, len(recs))
	for i, r := range recs {
		f, err := detect.ParseFinding(r)
		if err != nil {
			b.Fatal(err)
		}
		fs[i] = f
	}
	b.ReportAllocs()
	b.ResetTimer()
	rowsOf(fs, b.N)
}

// BenchmarkStoreFindings is the consumer's path of a batch of 500
// records to the insert: parse, row, and the column arrays handed to the
// driver. One op is one record.
func BenchmarkStoreFindings(b *testing.B) {
	if err := storeRows(benchRecords(b), b.N); err != nil {
		b.Fatal(err)
	}
}
