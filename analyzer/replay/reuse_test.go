package replay_test

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// reuseContracts are the contracts the reuse tests replay under: names
// derived or not, every boundary required or the exchange left out.
func reuseContracts() []*contract.Contract {
	noExchange := seedContract()
	noExchange.Required = model.AllBoundaries.Without(model.Transferred).Without(model.SignalDelivered)
	// Deadlines on a clock that changes at midnight, at times of day it
	// skips or repeats: the Evaluator carries midnights from one batch's
	// date to the next's.
	midnightDST := seedContract()
	loc, err := time.LoadLocation("America/Havana")
	if err != nil {
		panic("America/Havana: " + err.Error()) // time/tzdata is linked in
	}
	midnightDST.Location = loc
	midnightDST.Deadlines[model.Produced] = contract.Deadline{Kind: contract.Absolute, TimeOfDay: 30 * time.Minute, Text: "business_date 00:30"}
	midnightDST.Deadlines[model.Identified] = contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: 0, Text: "business_date + 1d 00:00"}
	return []*contract.Contract{contract.Default("p"), seedContract(), noExchange, midnightDST}
}

// reuseBatch is one batch of a run: its events and the context of its
// evaluation.
type reuseBatch struct {
	events []model.Event
	asOf   time.Time
	ctx    replay.Context
}

// reuseRun returns batches of every shape one after another: cut, whole,
// re-runs, long enough for the id index, some with a previous batch and
// live processes in their context.
func reuseRun(r *rand.Rand) []reuseBatch {
	var run []reuseBatch
	for i := 0; i < 12; i++ {
		date := model.Date{Year: 2026, Month: time.Month(1 + r.IntN(12)), Day: 1 + r.IntN(28)}
		var events []model.Event
		switch r.IntN(4) {
		case 0:
			events = randomBatch(r, "p", date)
		case 1:
			events = deliveredBatch(r, "p", date)
		case 2:
			// Over the id index threshold, with repeats.
			events = shuffleWithRepeats(r, append(randomBatch(r, "p", date), deliveredBatch(r, "p", date)...))
		default:
			// A declared re-run: its names are checked against its date's.
			events = deliveredBatch(r, "p", date)
			for j := range events {
				events[j].BatchID += "-r1"
			}
		}
		b := reuseBatch{events: events, asOf: date.In(time.UTC).Add(time.Duration(17+r.IntN(60)) * time.Hour)}
		if r.IntN(3) == 0 {
			prev := model.BatchKey{Pipeline: "p", BusinessDate: date.AddDays(-1), BatchID: date.AddDays(-1).Compact()}
			b.ctx.Previous = replay.Previous{Checked: true, Key: prev, Seen: r.IntN(2) == 0, Verdict: model.NotIdentified}
			b.ctx.Alive = []replay.Heartbeat{{System: model.Consumer, Component: "loader", At: date.In(time.UTC), EventID: "hb"}}
		}
		run = append(run, b)
	}
	return run
}

// TestResetAndEvaluatorMatchFreshStates is the promise of the reuse API:
// a State Reset between batches and an Evaluator that reuses one Diagnosis
// give, batch after batch, the diagnosis a new State and Evaluate give.
// Nothing of the batch before leaks into the next one, and the strings of
// an earlier diagnosis stay what they were after later batches reuse the
// memory.
func TestResetAndEvaluatorMatchFreshStates(t *testing.T) {
	for _, c := range reuseContracts() {
		for seed := uint64(0); seed < 60; seed++ {
			r := rand.New(rand.NewPCG(seed, 23))
			var s replay.State
			var ev replay.Evaluator
			type kept struct {
				batch, summary string
				ids            []string
				want           replay.Diagnosis
			}
			var keep []kept
			for i, b := range reuseRun(r) {
				s.Reset()
				for j := range b.events {
					s.Step(&b.events[j])
				}
				got := ev.Evaluate(&s, c, b.asOf, b.ctx)
				want := replay.Replay(b.events, c, b.asOf, b.ctx)
				if !reflect.DeepEqual(*got, want) {
					t.Fatalf("contract %s, seed %d, batch %d: a reset state and an evaluator diagnose otherwise than a new state\nwant %+v\n got %+v",
						c.Name(), seed, i, want, *got)
				}
				k := kept{batch: got.Batch, summary: got.NextStep.Summary, want: want}
				for _, e := range got.Timeline {
					k.ids = append(k.ids, e.EventID)
				}
				keep = append(keep, k)
			}
			for i, k := range keep {
				if k.batch != k.want.Batch || k.summary != k.want.NextStep.Summary {
					t.Fatalf("contract %s, seed %d, batch %d: a kept string changed after later batches: %q, %q; want %q, %q",
						c.Name(), seed, i, k.batch, k.summary, k.want.Batch, k.want.NextStep.Summary)
				}
				for j, id := range k.ids {
					if id != k.want.Timeline[j].EventID {
						t.Fatalf("contract %s, seed %d, batch %d: kept event id %d is %q after later batches, want %q",
							c.Name(), seed, i, j, id, k.want.Timeline[j].EventID)
					}
				}
			}
		}
	}
}

// TestResetKeysTheNextBatch checks that a reset state takes its key from
// its next event, as the zero State does, and refuses the previous
// batch's events.
func TestResetKeysTheNextBatch(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	a := model.Event{Spec: model.SpecV1, ID: "a", Type: model.JobSucceeded, Time: date.In(time.UTC),
		Pipeline: "p", BusinessDate: date, BatchID: "20260930", System: model.Producer}
	b := a
	b.ID, b.BatchID = "b", "20260930-r1"
	var s replay.State
	s.Step(&a)
	keyA := s.Key()
	s.Reset()
	if s.Len() != 0 || !s.Key().IsZero() {
		t.Fatalf("after Reset: %d events, key %v; want none and the zero key", s.Len(), s.Key())
	}
	if !s.Step(&b) || s.Key() != b.Key() {
		t.Fatalf("after Reset, Step(b) keyed the state %v, want %v", s.Key(), b.Key())
	}
	if s.Step(&a) {
		t.Fatalf("after Reset and Step(b), the state took an event of the batch before")
	}
	if keyA != a.Key() {
		t.Fatalf("the key taken before Reset changed to %v, want %v", keyA, a.Key())
	}
}

// TestVerdictsMatchEvaluate checks the cheap readings of a state
// (Outcome, Verdict, Brief), which skip the evidence lists, against the
// verdict and first missing boundary of its full diagnosis.
func TestVerdictsMatchEvaluate(t *testing.T) {
	for _, c := range reuseContracts() {
		for seed := uint64(0); seed < 60; seed++ {
			r := rand.New(rand.NewPCG(seed, 29))
			for i, b := range reuseRun(r) {
				var s replay.State
				for j := range b.events {
					s.Step(&b.events[j])
				}
				d := s.Evaluate(c, b.asOf, replay.Context{})
				first := model.NoBoundary
				if d.FirstMissing != "" {
					var err error
					if first, err = model.ParseBoundary(d.FirstMissing); err != nil {
						t.Fatal(err)
					}
				}
				if v := s.Verdict(c, b.asOf); v != d.Verdict {
					t.Fatalf("contract %s, seed %d, batch %d: Verdict %s, Evaluate %s", c.Name(), seed, i, v, d.Verdict)
				}
				v, seen := s.Outcome(c, b.asOf)
				if seen != (d.Events > 0) || (seen && v != d.Verdict) {
					t.Fatalf("contract %s, seed %d, batch %d: Outcome %s, %v; Evaluate %s with %d events", c.Name(), seed, i, v, seen, d.Verdict, d.Events)
				}
				bv, bf, bseen := s.Brief(c, b.asOf)
				if bseen != seen || (seen && bv != d.Verdict) || bf != first {
					t.Fatalf("contract %s, seed %d, batch %d: Brief %s, %s, %v; Evaluate %s, %s", c.Name(), seed, i, bv, bf, bseen, d.Verdict, first)
				}
			}
		}
	}
}

// TestKeyTextSurvivesResetAndCompact: a state keeps its key as the key's
// text in its arena, and the diagnosis names its batch with it. After
// Reset (the arena shared with the batch before) and after Compact (a new
// arena, rebuilt when copies conflict), the key and the batch name must
// still be the events', and a name taken before must not change.
func TestKeyTextSurvivesResetAndCompact(t *testing.T) {
	c := seedContract()
	var s replay.State
	var ev replay.Evaluator
	var kept []string
	var want []string
	for seed := uint64(0); seed < 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		date := model.Date{Year: 2026, Month: time.Month(1 + seed%12), Day: 1 + int(seed%28)}
		events := conflictingBatch(r, date, func(*model.Event) {})
		if seed%2 == 1 {
			events = deliveredBatch(r, "account-balance-snapshot.daily", date)
		}
		s.Reset()
		for i := range events {
			s.Step(&events[i])
			if r.IntN(3) == 0 {
				s.Compact()
			}
		}
		k := events[0].Key()
		if s.Key() != k {
			t.Fatalf("seed %d: key %v, want %v", seed, s.Key(), k)
		}
		d := ev.Evaluate(&s, c, date.In(time.UTC).Add(40*time.Hour), replay.Context{})
		name := k.Pipeline + "/" + k.BusinessDate.String() + "/" + k.BatchID
		if d.Batch != name || d.Pipeline != k.Pipeline || d.BatchID != k.BatchID || d.BusinessDate != k.BusinessDate.String() {
			t.Fatalf("seed %d: diagnosis names %q (%q, %q, %q), want %q", seed, d.Batch, d.Pipeline, d.BusinessDate, d.BatchID, name)
		}
		kept, want = append(kept, d.Batch), append(want, name)
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Fatalf("batch %d: a name taken before changed to %q, want %q", i, kept[i], want[i])
		}
	}
}

// TestRecycleMatchesFreshStates: a State recycled between batches (its
// arena filled from the start again) and an Evaluator give, batch after
// batch, the diagnosis a new State gives, rendered before the next batch
// is stepped in; and the arena is the same memory batch after batch.
func TestRecycleMatchesFreshStates(t *testing.T) {
	for _, c := range reuseContracts() {
		for seed := uint64(0); seed < 60; seed++ {
			r := rand.New(rand.NewPCG(seed, 29))
			var s replay.State
			var ev replay.Evaluator
			var firstKey *byte
			for i, b := range reuseRun(r) {
				s.Recycle()
				for j := range b.events {
					s.Step(&b.events[j])
				}
				got := ev.Evaluate(&s, c, b.asOf, b.ctx)
				want := replay.Replay(b.events, c, b.asOf, b.ctx)
				if !reflect.DeepEqual(*got, want) {
					t.Fatalf("contract %s, seed %d, batch %d: a recycled state diagnoses otherwise than a new state\nwant %+v\n got %+v",
						c.Name(), seed, i, want, *got)
				}
				if g, w := string(got.AppendJSON(nil)), string(want.AppendJSON(nil)); g != w {
					t.Fatalf("contract %s, seed %d, batch %d: a recycled state renders\n%s\nwant\n%s", c.Name(), seed, i, g, w)
				}
				// The key's text opens the arena: the same bytes for
				// every batch that fits the room of the first ones.
				if i == 1 {
					firstKey = unsafe.StringData(s.Key().Pipeline)
				}
				if i == 2 && len(b.events) <= 12 && unsafe.StringData(s.Key().Pipeline) != firstKey {
					t.Fatalf("contract %s, seed %d: batch 2's key is not at the start of the recycled arena", c.Name(), seed)
				}
			}
		}
	}
}

// TestRecycleAfterReset: Reset, Recycle and a zero State are
// interchangeable before any batch.
func TestRecycleAfterReset(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	c := seedContract()
	asOf := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	a := deliveredBatch(r, "p", model.Date{Year: 2026, Month: 3, Day: 1})
	b := randomBatch(r, "p", model.Date{Year: 2026, Month: 3, Day: 2})
	var s replay.State
	for _, e := range a {
		s.Step(&e)
	}
	s.Reset()
	for _, e := range a {
		s.Step(&e)
	}
	s.Recycle()
	for _, e := range b {
		s.Step(&e)
	}
	if got, want := s.Evaluate(c, asOf, replay.Context{}), replay.Replay(b, c, asOf, replay.Context{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Reset and Recycle: %+v\nwant %+v", got, want)
	}
}

// TestSummaryMatchesEvaluate: an Evaluator's Summary of a batch is its
// diagnosis (a new State's Evaluate) as far as the status, with the same
// previous batch, batch after batch; what it leaves out is empty.
func TestSummaryMatchesEvaluate(t *testing.T) {
	for _, c := range reuseContracts() {
		for seed := uint64(0); seed < 60; seed++ {
			r := rand.New(rand.NewPCG(seed, 31))
			var s replay.State
			var ev replay.Evaluator
			for i, b := range reuseRun(r) {
				s.Reset()
				for j := range b.events {
					s.Step(&b.events[j])
				}
				want := replay.Replay(b.events, c, b.asOf, b.ctx)
				got := *ev.Summary(&s, c, b.asOf, b.ctx.Previous)
				if len(got.Timeline) != 0 || got.Previous != nil || got.Attempt != nil || len(got.Alive) != 0 || got.Blocked != nil ||
					got.Expected != (replay.Expected{}) || !reflect.DeepEqual(got.NextStep, replay.NextStep{}) || !got.Pending.IsZero() {
					t.Fatalf("contract %s, seed %d, batch %d: the summary has more than the status: %+v", c.Name(), seed, i, got)
				}
				// The rest is the diagnosis's.
				want.Timeline, want.Previous, want.Attempt, want.Alive, want.Blocked = got.Timeline, nil, nil, got.Alive, nil
				want.Expected, want.NextStep, want.Pending = replay.Expected{}, replay.NextStep{}, time.Time{}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("contract %s, seed %d, batch %d: summary\n%+v\nwant the diagnosis's\n%+v", c.Name(), seed, i, got, want)
				}
			}
		}
	}
}
