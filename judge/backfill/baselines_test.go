package backfill

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/model"
)

// TestRunBaselinesOneRead: with baselines, a unit of several pipelines
// reads its baselines' window and its range in one read
// (EachBatchEventPasses), and its diagnoses are those of pipelines too
// large for a unit, which learn from a read of the window of their own:
// the same baselines shown (usually_by), byte for byte.
func TestRunBaselinesOneRead(t *testing.T) {
	var events []model.Event
	for p := range 6 {
		for d := range 25 {
			date := model.MustParseDate("2026-09-01").AddDays(d)
			at := date.In(time.UTC).Add(2*time.Hour + time.Duration(p)*time.Minute)
			key := model.Event{Spec: model.SpecV1, Pipeline: fmt.Sprintf("p%02d", p), BusinessDate: date, BatchID: date.Compact(), System: model.Producer}
			started, succeeded := key, key
			started.ID, started.Type, started.Time = fmt.Sprintf("e-%02d-%02d-a", p, d), model.JobStarted, at
			succeeded.ID, succeeded.Type, succeeded.Time = fmt.Sprintf("e-%02d-%02d-b", p, d), model.JobSucceeded, at.Add(time.Hour)
			events = append(events, started, succeeded)
		}
	}
	run := func(unitRows int) ([]byte, *memReader) {
		r := &memReader{events: events}
		cfg := Config{From: model.MustParseDate("2026-09-10"), To: model.MustParseDate("2026-09-25"), AsOf: time.Date(2026, 9, 27, 0, 0, 0, 0, time.UTC),
			Contracts: noContracts{}, Workers: 2, UnitRows: unitRows, Baselines: &learn.Options{}}
		var out bytes.Buffer
		if _, err := Run(context.Background(), r, cfg, Hooks{Chunk: func(c *Chunk) error {
			out.Write(c.JSON)
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), r
	}
	alone, ra := run(10) // every pipeline a unit of its own, read in windows
	together, rt := run(1000)
	if n := ra.passReads.Load(); n != 0 {
		t.Fatalf("pipelines larger than a unit: %d reads of passes, want 0", n)
	}
	if n, m := rt.passReads.Load(), rt.reads.Load(); n != 1 || m != 2 {
		t.Fatalf("one unit of 6 pipelines: %d reads of passes (%d passes), want 1 (2)", n, m)
	}
	if !bytes.Contains(alone, []byte(`"usually_by"`)) {
		t.Fatalf("no baseline shown: the test shows nothing\n%.2000s", alone)
	}
	if !bytes.Equal(alone, together) {
		t.Fatalf("diagnoses differ: pipelines read alone\n%.3000s\nin one unit\n%.3000s", alone, together)
	}
}
