package replay_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// TestCompactNeverChangesDiagnosis folds batches with redeliveries and
// conflicting duplicates (one event_id, other contents: the state replaces
// a record and leaves its strings behind) and compacts at random points, as
// the detector does after each evaluation. The final diagnosis must be the
// one of a state never compacted, and a diagnosis taken before a compaction
// must read the same afterwards: Compact builds a new arena, it never
// rewrites the bytes earlier diagnoses point into.
func TestCompactNeverChangesDiagnosis(t *testing.T) {
	c := seedContract()
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 23))
		date := model.Date{Year: 2026, Month: 10, Day: 1 + int(seed%28)}
		events := conflictingBatch(r, date, func(e *model.Event) { e.Checksum = "sha256:" + strings.Repeat("c", r.IntN(200)) })
		asOf := date.In(time.UTC).Add(40 * time.Hour)
		var compacted, plain replay.State
		var early []byte
		var earlyDiag replay.Diagnosis
		for i := range events {
			compacted.Step(&events[i])
			plain.Step(&events[i])
			if r.IntN(3) == 0 {
				compacted.Compact()
			}
			if i == len(events)/2 {
				earlyDiag = compacted.Evaluate(c, asOf, replay.Context{})
				early = earlyDiag.AppendJSON(nil)
			}
		}
		compacted.Compact()
		got, want := compacted.Evaluate(c, asOf, replay.Context{}), plain.Evaluate(c, asOf, replay.Context{})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: compacting changed the diagnosis\nwant %+v\n got %+v", seed, want, got)
		}
		if again := earlyDiag.AppendJSON(nil); !bytes.Equal(again, early) {
			t.Fatalf("seed %d: a diagnosis taken before later steps and compactions changed:\nwas %s\nnow %s", seed, early, again)
		}
	}
}

// TestStateKeepsNoEventMemory folds events whose strings share one buffer,
// as a decoder's events do, then overwrites that buffer: the diagnosis must
// not change. A state that pointed into its events would keep every
// decoder buffer of an open batch alive (and, with a reused buffer, read
// garbage).
func TestStateKeepsNoEventMemory(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	c := seedContract()
	asOf := date.In(time.UTC).Add(40 * time.Hour)
	events := deliveredBatch(rand.New(rand.NewPCG(5, 5)), "account-balance-snapshot.daily", date)
	var buf []byte
	shared := func(s string) string {
		if s == "" {
			return ""
		}
		start := len(buf)
		buf = append(buf, s...)
		return unsafe.String(&buf[start], len(s))
	}
	buf = make([]byte, 0, 1<<16)
	aliased := make([]model.Event, len(events))
	for i, e := range events {
		e.ID, e.Pipeline, e.BatchID = shared(e.ID), shared(e.Pipeline), shared(e.BatchID)
		e.Component, e.Object, e.Checksum, e.Error = shared(e.Component), shared(e.Object), shared(e.Checksum), shared(e.Error)
		aliased[i] = e
	}
	want := replay.Replay(events, c, asOf, replay.Context{})
	var s replay.State
	for i := range aliased {
		s.Step(&aliased[i])
	}
	for i := range buf {
		buf[i] = 'x'
	}
	got := s.Evaluate(c, asOf, replay.Context{})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the state read its events' memory after Step\nwant %+v\n got %+v", want, got)
	}
}

// TestStringsRoundTrip checks that every string field comes back from the
// state as it went in, on both sides of the length (255) from which the
// stored length takes five bytes instead of one.
func TestStringsRoundTrip(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	for _, n := range []int{0, 1, 200, 250, 251, 252, 253, 254, 255, 256, 70000} {
		e := model.Event{Spec: model.SpecV1, ID: "id-" + strings.Repeat("i", n), Type: model.JobFailed,
			Time: date.In(time.UTC).Add(time.Hour), Pipeline: "p", BusinessDate: date, BatchID: "20260930",
			System: model.Producer, Component: strings.Repeat("c", n), Object: strings.Repeat("o", n),
			Checksum: strings.Repeat("s", n), Error: "boom" + strings.Repeat("e", n), Attempt: -3, HasAttempt: true}
		var s replay.State
		s.Step(&e)
		s.Compact()
		d := s.Evaluate(seedContract(), date.In(time.UTC).Add(48*time.Hour), replay.Context{})
		if len(d.Timeline) != 1 {
			t.Fatalf("length %d: %d timeline entries, want 1", n, len(d.Timeline))
		}
		got := d.Timeline[0]
		if got.EventID != e.ID || got.Component != e.Component || got.Object != e.Object || got.Checksum != e.Checksum ||
			got.Error != e.Error || got.Attempt != -3 || !got.HasAttempt || got.HasRows || got.HasBytes {
			t.Fatalf("length %d: timeline entry %+v does not carry the event's fields back", n, got)
		}
	}
}

// TestCompactIsFreeWhenCompact: the detector compacts after every
// evaluation, so a state that has not grown since must cost nothing.
func TestCompactIsFreeWhenCompact(t *testing.T) {
	date := model.MustParseDate("2026-09-30")
	events := deliveredBatch(rand.New(rand.NewPCG(9, 9)), "p", date)
	var s replay.State
	for i := range events {
		s.Step(&events[i])
	}
	s.Compact()
	if n := testing.AllocsPerRun(20, s.Compact); n != 0 {
		t.Fatalf("Compact of a compact state: %v allocations, want 0", n)
	}
	s.Step(&events[0]) // a redelivery changes nothing
	if n := testing.AllocsPerRun(20, s.Compact); n != 0 {
		t.Fatalf("Compact after a redelivery: %v allocations, want 0", n)
	}
}
