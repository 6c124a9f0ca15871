package history_test

import (
	"reflect"
	"testing"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// TestReplayOnlyBatchRead: the replay's read of several pipelines
// (ReplayOnly), which has the server send the pipeline, type, system and
// business date as numbers, gives the events the full read gives, in the
// same order, less spec and attrs: a system or type outside the lists it
// sends comes through as text, copies are read once, and a pipeline of
// the same prefix not asked for is not read.
func TestReplayOnlyBatchRead(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "store_replayread")
	a := testenv.Events(400, "replay.a", 1)
	b := testenv.Events(300, "replay.b", 2)
	a[3].System = "scheduler"                // not a v1 system: stored as it came
	a[5].Type = "job.rescheduled"            // not a known type
	b[7].Attrs = map[string]string{"k": "v"} // attrs the replay's read leaves out
	other := testenv.Events(50, "replay.ab", 3)
	all := append(append(append([]model.Event(nil), a...), b...), other...)
	if err := s.Events(ctx, all); err != nil {
		t.Fatal(err)
	}
	if err := s.Events(ctx, b); err != nil { // copies of replay.b
		t.Fatal(err)
	}
	full, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	replayOnly, err := history.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	replayOnly.ReplayOnly = true
	from, to := model.MustParseDate("2026-08-01"), model.MustParseDate("2026-12-31")
	read := func(st *history.Store) []model.Event {
		var out []model.Event
		// replay.b twice: names asked twice are read once.
		if err := st.EachBatchEvent(ctx, []string{"replay.b", "replay.a", "replay.b"}, from, to, func(e model.Event) error {
			out = append(out, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := read(full), read(replayOnly)
	if len(want) == 0 {
		t.Fatal("the full read found no event")
	}
	sawSystem, sawType := false, false
	var flags [3]bool // some event has rows, bytes, an attempt
	for i := range want {
		want[i].Attrs = nil
		sawSystem = sawSystem || want[i].System == "scheduler"
		sawType = sawType || want[i].Type == "job.rescheduled"
		flags[0], flags[1], flags[2] = flags[0] || want[i].HasRows, flags[1] || want[i].HasBytes, flags[2] || want[i].HasAttempt
	}
	if !sawSystem || !sawType {
		t.Fatalf("the full read lost the unlisted system (%v) or type (%v)", sawSystem, sawType)
	}
	if flags != [3]bool{true, true, true} {
		t.Fatalf("the events test too few flags (rows, bytes, attempt): %v", flags)
	}
	if len(got) != len(want) {
		t.Fatalf("replay-only read %d events, the full read %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("event %d: replay-only read\n%+v\nwant\n%+v", i, got[i], want[i])
		}
	}
}
