package detect_test

import (
	"math/rand/v2"
	"testing"

	"github.com/handoff-dev/handoff/analyzer/detect"
)

// benchRecords returns the wire records a detector publishes over days
// generated business dates: first open records, updates of open ones and
// resolutions, in the proportions the generator's history gives.
func benchRecords(tb testing.TB, days int) [][]byte {
	tb.Helper()
	p := newPlayer(mustNew(tb, detect.Config{Contracts: seedContracts(tb)}), genHistory(rand.New(rand.NewPCG(5, 5)), days), nil)
	for _, s := range steps(days) {
		p.step(s)
	}
	var out [][]byte
	var open, updated, resolved int
	for i := range p.findings {
		f := &p.findings[i]
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
	if open == 0 || updated == 0 || resolved == 0 {
		tb.Fatalf("records: %d first open, %d updated, %d resolved: want some of each", open, updated, resolved)
	}
	return out
}

// BenchmarkParseFinding decodes the records a detector writes: one op is
// one record.
func BenchmarkParseFinding(b *testing.B) {
	recs := benchRecords(b, 20)
	var n int
	for _, r := range recs {
		n += len(r)
	}
	b.SetBytes(int64(n / len(recs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := detect.ParseFinding(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}
