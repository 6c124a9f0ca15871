package replay_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// BenchmarkReplay measures the replay (Step over every event, then
// Evaluate to a full diagnosis, narrative included; decoding excluded) of
// batches of 10 to 15 events, on one core. The target is 2 million
// events/s for the typical mix (docs/performance.md).
//
//   - typical: 80% of batches delivered (the whole ladder plus context
//     events), 20% stopped somewhere, as production pipelines run;
//   - stalled: every batch cut at a random boundary, so nearly every one
//     is late and carries anomalies, sides full of absences and a restore
//     or investigate plan: the worst case for the narrative.
func BenchmarkReplay(b *testing.B) {
	for _, mix := range []struct {
		name      string
		delivered float64
	}{{"typical", 0.8}, {"stalled", 0}} {
		b.Run(mix.name, func(b *testing.B) {
			benchReplay(b, mix.delivered)
		})
	}
}

func benchReplay(b *testing.B, delivered float64) {
	c := seedContract()
	r := rand.New(rand.NewPCG(1, 2))
	var batches [][]model.Event
	events := 0
	for len(batches) < 1000 {
		date := model.Date{Year: 2026, Month: time.Month(1 + len(batches)%12), Day: 1 + len(batches)%28}
		var bt []model.Event
		if r.Float64() < delivered {
			bt = deliveredBatch(r, "account-balance-snapshot.daily", date)
		} else {
			bt = randomBatch(r, "account-balance-snapshot.daily", date)
		}
		if len(bt) < 10 || len(bt) > 15 {
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
