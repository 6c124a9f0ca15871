package replay_test

import (
	"math/rand/v2"
	"reflect"
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

// TestStepMatchesReplay checks that folding events one at a time, as the
// streaming detector will, gives the answer of the batch replay at every
// point in the stream.
func TestStepMatchesReplay(t *testing.T) {
	c := seedContract()
	for seed := uint64(0); seed < 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		date := model.Date{Year: 2026, Month: 10, Day: 1 + int(seed%28)}
		events := shuffleWithRepeats(r, randomBatch(r, "account-balance-snapshot.daily", date))
		var s replay.State
		for i := range events {
			s.Step(&events[i])
			asOf := date.In(time.UTC).Add(40 * time.Hour)
			got := s.Evaluate(c, asOf, replay.Context{})
			want := replay.Replay(events[:i+1], c, asOf, replay.Context{})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d after %d events: incremental state differs from replay", seed, i+1)
			}
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
