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

// TestBatchEventPasses: EachBatchEventPasses hands each pass the events
// EachBatchEvent reads of its range, in the same order, every pass after
// the one before it, whether the ranges join up (one read, walked once a
// pass) or not (a read each), on both reads (full and ReplayOnly); an
// empty range gets nothing.
func TestBatchEventPasses(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "store_passes")
	a := testenv.Events(400, "passes.a", 1)
	b := testenv.Events(300, "passes.b", 2)
	all := append(append([]model.Event(nil), a...), b...)
	if err := s.Events(ctx, all); err != nil {
		t.Fatal(err)
	}
	if err := s.Events(ctx, a[:100]); err != nil { // copies
		t.Fatal(err)
	}
	d := model.MustParseDate
	cases := map[string][][2]model.Date{
		"overlapping": {{d("2026-09-10"), d("2026-09-30")}, {d("2026-08-01"), d("2026-09-15")}},
		"touching":    {{d("2026-08-10"), d("2026-08-20")}, {d("2026-08-21"), d("2026-09-02")}},
		"apart":       {{d("2026-09-20"), d("2026-09-25")}, {d("2026-08-03"), d("2026-08-09")}},
		"one empty":   {{d("2026-08-10"), d("2026-08-09")}, {d("2026-08-05"), d("2026-08-12")}},
	}
	names := []string{"passes.b", "passes.a"}
	for _, replayOnly := range []bool{false, true} {
		st, err := history.New(conn, db)
		if err != nil {
			t.Fatal(err)
		}
		st.ReplayOnly = replayOnly
		for name, ranges := range cases {
			var want [][]model.Event
			for _, r := range ranges {
				var evs []model.Event
				if err := st.EachBatchEvent(ctx, names, r[0], r[1], func(e model.Event) error {
					evs = append(evs, e)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				want = append(want, evs)
			}
			if r := ranges[len(ranges)-1]; len(want[len(want)-1]) == 0 {
				t.Fatalf("%s: no event in %s..%s: the case tests nothing", name, r[0], r[1])
			}
			got := make([][]model.Event, len(ranges))
			var passes []history.Pass
			for i, r := range ranges {
				passes = append(passes, history.Pass{From: r[0], To: r[1], Fn: func(e *model.Event) error {
					for _, later := range got[i+1:] {
						if len(later) > 0 {
							t.Fatalf("%s: pass %d got an event after pass %d began", name, i, i+1)
						}
					}
					got[i] = append(got[i], *e)
					return nil
				}})
			}
			if err := st.EachBatchEventPasses(ctx, names, passes...); err != nil {
				t.Fatal(err)
			}
			for i := range ranges {
				if len(got[i]) != len(want[i]) {
					t.Fatalf("%s (replay-only %v), pass %d: %d events, EachBatchEvent %d", name, replayOnly, i, len(got[i]), len(want[i]))
				}
				for j := range want[i] {
					if !reflect.DeepEqual(got[i][j], want[i][j]) {
						t.Fatalf("%s (replay-only %v), pass %d, event %d:\n%+v\nwant\n%+v", name, replayOnly, i, j, got[i][j], want[i][j])
					}
				}
			}
		}
	}
}
