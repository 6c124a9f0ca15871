package replay_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// BenchmarkReplay measures the replay (Step over every event, then
// Evaluate to a full diagnosis, next step included; decoding excluded) of
// batches of 10 to 15 events, on one core. The target is 3 million
// events/s for the typical mix (docs/performance.md).
//
//   - typical: 80% of batches delivered (the whole ladder plus context
//     events), 20% stopped somewhere, as production pipelines run;
//   - stalled: every batch cut at a random boundary, so nearly every one
//     is late and carries anomalies, sides full of absences and a restore
//     or investigate plan: the worst case for the next step.
//
// Both fold batch after batch as a loop over many batches does: one
// State, Reset between batches, and one Evaluator. The -recycle variants
// Recycle the State instead, as batches.Ordered (a backfill) does, whose
// caller keeps nothing of a diagnosis: the batch's strings reuse the
// arena. The -fresh variants make a new State and a new Diagnosis for
// every batch, as a caller that diagnoses one batch does.
func BenchmarkReplay(b *testing.B) {
	for _, mix := range []struct {
		name      string
		delivered float64
		loop      loop
	}{
		{"typical", 0.8, reset}, {"stalled", 0, reset},
		{"typical-recycle", 0.8, recycle}, {"stalled-recycle", 0, recycle},
		{"typical-fresh", 0.8, fresh}, {"stalled-fresh", 0, fresh},
	} {
		b.Run(mix.name, func(b *testing.B) {
			benchReplay(b, mix.delivered, mix.loop)
		})
	}
}

// loop is how a benchmark's State serves batch after batch.
type loop int

const (
	reset loop = iota
	recycle
	fresh
)

func benchReplay(b *testing.B, delivered float64, how loop) {
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
	// The setup's garbage (some 30 MB of generated events) collected
	// now: left to the collector, its marking ran inside the timed loop
	// (a tenth of the loop's instructions on one core), a cost of the
	// setup, not of the replay.
	runtime.GC()
	b.ResetTimer()
	var s replay.State
	var ev replay.Evaluator
	for i := 0; i < b.N; i++ {
		for _, bt := range batches {
			switch how {
			case fresh:
				s = replay.State{}
			case recycle:
				s.Recycle()
			default:
				s.Reset()
			}
			for j := range bt {
				s.Step(&bt[j])
			}
			if how == fresh {
				_ = s.Evaluate(c, asOf, replay.Context{})
			} else {
				_ = ev.Evaluate(&s, c, asOf, replay.Context{})
			}
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(len(batches)), "events/batch")
}
