package detect_test

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

// TestNextDueIsTheNextDeadline: NextDue tells the wiring when to read the
// safe time between its regular advances. It is the first instant a
// deadline fires (the stalled seed batch's signal_delivered, due
// 22:00:00.000Z, overdue from the millisecond after): an advance just
// before it raises nothing, one at it raises the finding. An event folded ahead of the
// safe time (a batch whose events keep coming) is not a deadline: the
// regular advances evaluate it.
func TestNextDueIsTheNextDeadline(t *testing.T) {
	d := mustNew(t, detect.Config{Contracts: seedContracts(t), From: model.MustParseDate("2026-09-30")})
	for _, e := range batchEvents(t, "2026-09-30") {
		d.Observe(&e)
	}
	if got := d.NextDue(); !got.IsZero() {
		t.Fatalf("NextDue before any advance = %v, want none (nothing evaluated yet)", got)
	}
	safe := at("2026-09-30T18:00:00Z")
	d.Advance(safe, safe)
	ahead := seedEvent("ahead-1", model.ArtifactTransferred, "2026-09-30T18:30:00Z", nil)
	d.Observe(&ahead)
	d.Advance(safe.Add(time.Minute), safe.Add(time.Minute))

	steps := []struct {
		due  string
		name string
	}{
		{"2026-09-30T22:00:00.001Z", "signal_delivered"},
	}
	for _, st := range steps {
		due := d.NextDue()
		if !due.Equal(at(st.due)) {
			t.Fatalf("NextDue = %v, want %s (the deadline of %s)", due, st.due, st.name)
		}
		before := due.Add(-time.Millisecond)
		if fs := d.Advance(before, before); len(fs) != 0 {
			t.Fatalf("safe %v, a millisecond before NextDue: %+v, want nothing", before, summarize(fs))
		}
		if got := d.NextDue(); !got.Equal(due) {
			t.Fatalf("after an advance short of it, NextDue = %v, want %v still", got, due)
		}
		fs := d.Advance(due, due)
		if len(fs) == 0 || fs[0].Name != st.name {
			t.Fatalf("safe %v (NextDue): %+v, want %s raised", due, summarize(fs), st.name)
		}
		if next := d.NextDue(); !next.IsZero() && !next.After(due) {
			t.Fatalf("after firing, NextDue = %v, not after %v", next, due)
		}
	}
}
