package history_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
)

// TestUnorderedAllPipelines: an all-pipelines read of batch events that
// may come unordered returns the same events as the ordered read, from
// events or from events_by_date (ByDate), copies at most as many as were
// stored; ByDate reads the copy, and only for such reads.
func TestUnorderedAllPipelines(t *testing.T) {
	ctx, conn, db, s := newDatabase(t, "bydate_read")
	var events []model.Event
	for i, p := range []string{"pipe.a", "pipe.b", "pipe.c"} {
		events = append(events, batchEventsOf(p, int64(i+1))...)
	}
	// An event of every text column set, multi-byte text, and a type and
	// a system no list of the read holds: the columns the unordered read
	// packs come apart into the same fields.
	odd := model.Event{Spec: model.SpecV1, ID: "odd-é-1", Type: model.EventType("custom.thing"), Time: time.UnixMilli(1785801600123).UTC(),
		Pipeline: "pipe.ö", BusinessDate: model.MustParseDate("2026-08-03"), BatchID: "b-ü", System: model.System("ops-ñ"), Component: "c✓",
		Object: "o/ß.csv", Checksum: "sha256:ab", Error: "boom ✗", Rows: 7, HasRows: true, Bytes: 9, HasBytes: true, Attempt: 2, HasAttempt: true}
	events = append(events, odd)
	if err := s.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
	// A second copy of pipe.b's events: a redelivery merges have not
	// collapsed yet.
	if err := s.Events(ctx, batchEventsOf("pipe.b", 2)); err != nil {
		t.Fatal(err)
	}
	from, to := model.MustParseDate("2026-08-03"), model.MustParseDate("2026-08-04")
	read := func(f history.Filter, byDate bool) []model.Event {
		t.Helper()
		st, err := history.New(conn, db)
		if err != nil {
			t.Fatal(err)
		}
		st.ReplayOnly, st.ByDate = true, byDate
		if byDate {
			ok, err := st.HasByDate(ctx)
			if err != nil || !ok {
				t.Fatalf("HasByDate = %v, %v after Ensure; want true", ok, err)
			}
		}
		got, err := st.Events(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tt := range []struct {
		name     string
		from, to model.Date
	}{{"one date", from, from}, {"two dates (windowed)", from, to}} {
		t.Run(tt.name, func(t *testing.T) {
			want := distinct(read(history.Filter{From: tt.from, To: tt.to}, false))
			if len(want) == 0 {
				t.Fatal("the ordered read found no event: the test data does not cover the range")
			}
			for _, byDate := range []bool{false, true} {
				got := read(history.Filter{From: tt.from, To: tt.to, Unordered: true}, byDate)
				if d := distinct(got); !reflect.DeepEqual(d, want) {
					t.Errorf("byDate=%v: unordered read holds %d distinct events, the ordered read %d, or their fields differ", byDate, len(d), len(want))
				}
				if len(got) > 2*len(want) {
					t.Errorf("byDate=%v: %d rows for %d events stored at most twice", byDate, len(got), len(want))
				}
			}
		})
	}
	// A row only the copy holds shows which table each read selects from.
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".events_by_date (business_date, pipeline, batch_id, event_id, type, time_ms)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(from.In(time.UTC), "pipe.z", "20260803", "only-in-copy", "job.started", int64(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	has := func(es []model.Event) bool {
		return slices.ContainsFunc(es, func(e model.Event) bool { return e.ID == "only-in-copy" })
	}
	if !has(read(history.Filter{From: from, To: from, Unordered: true}, true)) {
		t.Error("the ByDate unordered read did not read events_by_date")
	}
	if has(read(history.Filter{From: from, To: from}, true)) || has(read(history.Filter{From: from, To: from, Unordered: true}, false)) {
		t.Error("an ordered read, or one without ByDate, read events_by_date")
	}
}

// batchEventsOf is a few batch events of pipeline, over 2026-08-01
// on (testenv.Events without the heartbeats).
func batchEventsOf(pipeline string, seed int64) []model.Event {
	var out []model.Event
	for _, e := range testenv.Events(300, pipeline, seed) {
		if e.Type.HasBatch() {
			out = append(out, e)
		}
	}
	return out
}

// distinct sorts es as the table's sort key and drops the copies.
func distinct(es []model.Event) []model.Event {
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b model.Event) int {
		if c := a.Key().Compare(b.Key()); c != 0 {
			return c
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return slices.CompactFunc(out, func(a, b model.Event) bool { return a.Key() == b.Key() && a.ID == b.ID })
}
