package replay_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// TestOrderAndDuplicatesNeverChangeDiagnosis is the replay's defining
// property: the same set of events gives the same diagnosis whatever order
// they arrive in and however often each is delivered.
func TestOrderAndDuplicatesNeverChangeDiagnosis(t *testing.T) {
	contracts := []*contract.Contract{contract.Default("account-balance-snapshot.daily"), seedContract()}
	asOfs := []time.Duration{17*time.Hour + 5*time.Minute, 30 * time.Hour, 72 * time.Hour}
	for seed := uint64(0); seed < 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		date := model.Date{Year: 2026, Month: 9, Day: 1 + int(seed%28)}
		events := randomBatch(r, "account-balance-snapshot.daily", date)
		for _, c := range contracts {
			for _, off := range asOfs {
				asOf := date.In(time.UTC).Add(off)
				want := replay.Replay(events, c, asOf, replay.Context{})
				for trial := 0; trial < 5; trial++ {
					got := replay.Replay(shuffleWithRepeats(r, events), c, asOf, replay.Context{})
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d, contract %s, as of %s, trial %d: diagnosis changed with order/duplicates\nwant %+v\n got %+v",
							seed, c.Name(), asOf, trial, want, got)
					}
				}
			}
		}
	}
}

// TestConflictingDuplicatesResolveTheSameWay covers a producer bug: two
// different payloads under one event_id. Whichever arrives first, the state
// keeps the same one.
func TestConflictingDuplicatesResolveTheSameWay(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	a := model.Event{Spec: model.SpecV1, ID: "dup", Type: model.ConsumeSucceeded, Time: date.In(time.UTC).Add(20 * time.Hour),
		Pipeline: "p", BusinessDate: date, BatchID: "20260930", System: model.Consumer, Rows: 10, HasRows: true}
	b := a
	b.Rows = 11
	c := contract.Default("p")
	asOf := date.In(time.UTC).Add(48 * time.Hour)
	d1 := replay.Replay([]model.Event{a, b}, c, asOf, replay.Context{})
	d2 := replay.Replay([]model.Event{b, a}, c, asOf, replay.Context{})
	if !reflect.DeepEqual(d1, d2) {
		t.Fatalf("conflicting duplicates resolved by arrival order:\n%+v\n%+v", d1, d2)
	}
	if d1.Events != 1 {
		t.Fatalf("events = %d, want 1 (same event_id is one event)", d1.Events)
	}
}

// TestStepAgainstOracle folds a stream one event at a time, as a streaming
// caller does, and after every event compares the diagnosis with an oracle
// written from docs/diagnosis.md alone (its tables, not the replay's
// code): which boundaries are proven and by which events, the first missing
// boundary, the verdict, and what is said of each hypothesis. Events are
// dropped at random so that later boundaries appear without earlier ones,
// and one contract drops the exchange boundaries.
func TestStepAgainstOracle(t *testing.T) {
	noExchange := seedContract()
	noExchange.Required = model.AllBoundaries.Without(model.Transferred).Without(model.SignalDelivered)
	contracts := []*contract.Contract{contract.Default("account-balance-snapshot.daily"), seedContract(), noExchange}
	for seed := uint64(0); seed < 150; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		date := model.Date{Year: 2026, Month: 10, Day: 1 + int(seed%28)}
		var kept []model.Event
		for _, e := range randomBatch(r, "account-balance-snapshot.daily", date) {
			if r.IntN(4) != 0 {
				kept = append(kept, e)
			}
		}
		events := shuffleWithRepeats(r, kept)
		c := contracts[seed%uint64(len(contracts))]
		// Between the first and the last event time, so that some events
		// lie after as-of and must not count.
		asOf := date.In(time.UTC).Add(17*time.Hour + time.Duration(r.IntN(16))*time.Minute)
		if len(kept) > 0 && r.IntN(2) == 0 {
			asOf = kept[r.IntN(len(kept))].Time // an event exactly at as-of counts
		}
		var s replay.State
		for i := range events {
			s.Step(&events[i])
			got := s.Evaluate(c, asOf, replay.Context{})
			want := oracle(events[:i+1], c, asOf)
			if diff := want.diff(&got); diff != "" {
				t.Fatalf("seed %d, contract %s, after %d of %d events: %s", seed, c.Name(), i+1, len(events), diff)
			}
		}
	}
}

// oracleBoundaries is the ladder of docs/diagnosis.md: boundary name,
// the event types that prove it, and whether it is on the data path.
var oracleBoundaries = []struct {
	b     model.Boundary
	name  string
	types []string
	data  bool
}{
	{model.Produced, "produced", []string{"job.succeeded"}, true},
	{model.Finalized, "finalized", []string{"artifact.finalized"}, true},
	{model.Signaled, "signaled", []string{"signal.published"}, false},
	{model.Transferred, "transferred", []string{"artifact.transferred"}, true},
	{model.SignalDelivered, "signal_delivered", []string{"signal.transferred", "signal.restored"}, false},
	{model.Identified, "identified", []string{"batch.identified"}, true},
	{model.Consumed, "consumed", []string{"consume.succeeded"}, true},
}

// oracleHypotheses is the exclusion table of docs/diagnosis.md: each
// hypothesis and the rung (index into oracleBoundaries) of its boundary.
var oracleHypotheses = []struct {
	name string
	rung int
}{{"not_produced", 0}, {"not_final", 1}, {"not_transferred", 3}, {"not_identified", 5}, {"not_consumed", 6}}

type oracleWant struct {
	events       int
	evidence     [][]string // per rung: ids proving it, in (time, id) order
	firstMissing string
	verdict      string
	supports     []string
}

func oracle(events []model.Event, c *contract.Contract, asOf time.Time) oracleWant {
	byID := map[string]model.Event{}
	for _, e := range events {
		if !e.Time.After(asOf) {
			byID[e.ID] = e
		}
	}
	distinct := make([]model.Event, 0, len(byID))
	for _, e := range byID {
		distinct = append(distinct, e)
	}
	slices.SortFunc(distinct, func(a, b model.Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	w := oracleWant{events: len(distinct), evidence: make([][]string, len(oracleBoundaries)), verdict: "delivered"}
	for rung, ob := range oracleBoundaries {
		w.evidence[rung] = []string{}
		for _, e := range distinct {
			if slices.Contains(ob.types, string(e.Type)) {
				w.evidence[rung] = append(w.evidence[rung], e.ID)
			}
		}
		if w.firstMissing == "" && c.Requires(ob.b) && len(w.evidence[rung]) == 0 {
			w.firstMissing = ob.name
		}
	}
	for _, h := range oracleHypotheses {
		excluded := false
		for rung := h.rung; rung < len(oracleBoundaries); rung++ {
			if oracleBoundaries[rung].data && len(w.evidence[rung]) > 0 {
				excluded = true
			}
		}
		switch {
		case !c.Requires(oracleBoundaries[h.rung].b) || (excluded && w.verdict == "delivered"):
			w.supports = append(w.supports, "excluded")
		case w.verdict != "delivered":
			w.supports = append(w.supports, "no_evidence")
		default:
			w.verdict = h.name
			w.supports = append(w.supports, "supported")
		}
	}
	return w
}

// diff says how d differs from the oracle, or "" when it agrees.
func (w *oracleWant) diff(d *replay.Diagnosis) string {
	if d.Events != w.events {
		return fmt.Sprintf("events = %d, want %d distinct events up to as-of", d.Events, w.events)
	}
	if len(d.Boundaries) != len(oracleBoundaries) {
		return fmt.Sprintf("%d boundaries, want %d", len(d.Boundaries), len(oracleBoundaries))
	}
	for rung, ob := range oracleBoundaries {
		bs := d.Boundaries[rung]
		if bs.Name != ob.name || bs.Proven != (len(w.evidence[rung]) > 0) || !slices.Equal(bs.Evidence, w.evidence[rung]) {
			return fmt.Sprintf("boundary %s: %+v, want proven by %q", ob.name, bs, w.evidence[rung])
		}
	}
	if d.FirstMissing != w.firstMissing || d.Verdict.String() != w.verdict {
		return fmt.Sprintf("first missing %q, verdict %s; want %q, %s", d.FirstMissing, d.Verdict, w.firstMissing, w.verdict)
	}
	for i, h := range d.Hypotheses {
		if h.Name.String() != oracleHypotheses[i].name || string(h.Support) != w.supports[i] {
			return fmt.Sprintf("hypothesis %d: %s %s, want %s %s", i, h.Name, h.Support, oracleHypotheses[i].name, w.supports[i])
		}
	}
	return ""
}

// TestEvaluateLeavesStateUnchanged evaluates between steps, as a streaming
// caller does whenever a timer fires, and checks that the final diagnosis is
// the one of a state that was never evaluated early and was fed the distinct
// events in reverse order: an Evaluate that reordered or trimmed the state's
// records would show here.
func TestEvaluateLeavesStateUnchanged(t *testing.T) {
	c := seedContract()
	for seed := uint64(0); seed < 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 17))
		date := model.Date{Year: 2026, Month: 10, Day: 1 + int(seed%28)}
		// Over indexThreshold events, so that the id index is exercised too.
		events := shuffleWithRepeats(r, append(randomBatch(r, "p", date), deliveredBatch(r, "p", date)...))
		asOf := date.In(time.UTC).Add(40 * time.Hour)
		var stepped replay.State
		for i := range events {
			stepped.Step(&events[i])
			stepped.Evaluate(c, date.In(time.UTC).Add(time.Duration(r.IntN(30))*time.Hour), replay.Context{})
		}
		// randomBatch sometimes makes another batch (an identity
		// mismatch): the state keeps the first event's batch only.
		seen := map[string]bool{}
		var fresh replay.State
		for i := len(events) - 1; i >= 0; i-- {
			if e := &events[i]; e.Key() == stepped.Key() && !seen[e.ID] {
				seen[e.ID] = true
				fresh.Step(e)
			}
		}
		got, want := stepped.Evaluate(c, asOf, replay.Context{}), fresh.Evaluate(c, asOf, replay.Context{})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: evaluating between steps changed the diagnosis\nwant %+v\n got %+v", seed, want, got)
		}
		if got.Events != len(seen) {
			t.Fatalf("seed %d: %d events, want %d distinct", seed, got.Events, len(seen))
		}
	}
}

func TestStepIgnoresOtherBatchesAndHeartbeats(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	e := model.Event{Spec: model.SpecV1, ID: "a", Type: model.JobSucceeded, Time: date.In(time.UTC),
		Pipeline: "p", BusinessDate: date, BatchID: "1", System: model.Producer}
	other := e
	other.ID, other.BatchID = "b", "2"
	hb := model.Event{Spec: model.SpecV1, ID: "h", Type: model.ProcessHeartbeat, Time: date.In(time.UTC), Pipeline: "p", System: model.Consumer, Component: "c"}
	var s replay.State
	if !s.Step(&e) {
		t.Fatal("Step rejected the batch's own event")
	}
	if s.Step(&other) {
		t.Error("Step accepted an event of another batch")
	}
	if s.Step(&hb) {
		t.Error("Step accepted a heartbeat")
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1", s.Len())
	}
}

// conflictingBatch is a random and a delivered batch of pipeline "p" on
// date, with a copy of about one event in four that conflicts with it (the
// same event_id, other rows and error, and what vary changes: the state
// replaces a record and leaves its strings behind), shuffled with
// redeliveries.
func conflictingBatch(r *rand.Rand, date model.Date, vary func(*model.Event)) []model.Event {
	events := append(randomBatch(r, "p", date), deliveredBatch(r, "p", date)...)
	for i, n := 0, len(events); i < n; i++ {
		if r.IntN(4) == 0 {
			e := events[i]
			e.Rows, e.HasRows = e.Rows+1, true
			vary(&e)
			e.Error = strings.Repeat("e", r.IntN(3)*100)
			events = append(events, e)
		}
	}
	return shuffleWithRepeats(r, events)
}

// shuffleWithRepeats returns the events in a random order with some of them
// repeated, as an at-least-once transport delivers them.
func shuffleWithRepeats(r *rand.Rand, events []model.Event) []model.Event {
	out := append([]model.Event(nil), events...)
	for _, e := range events {
		for k := r.IntN(3); k > 0; k-- {
			out = append(out, e)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
