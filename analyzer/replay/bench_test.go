package replay_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// BenchmarkReplay measures the replay of typical batches (10 to 15 events
// each, decoding excluded): Step over every event, then Evaluate. The
// target is 2 million events/s on one core (issue 2).
func BenchmarkReplay(b *testing.B) {
	c := seedContract()
	r := rand.New(rand.NewPCG(1, 2))
	var batches [][]model.Event
	events := 0
	for len(batches) < 1000 {
		date := model.Date{Year: 2026, Month: time.Month(1 + len(batches)%12), Day: 1 + len(batches)%28}
		bt := randomBatch(r, "account-balance-snapshot.daily", date)
		if len(bt) < 10 {
			continue
		}
		batches = append(batches, bt)
		events += len(bt)
	}
	asOf := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, bt := range batches {
			var s replay.State
			for j := range bt {
				s.Step(&bt[j])
			}
			_ = s.Evaluate(c, asOf, replay.Context{})
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(len(batches)), "events/batch")
}
