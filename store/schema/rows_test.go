package schema

import (
	"strconv"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

func TestEventBatch(t *testing.T) {
	var b EventBatch
	e := model.Event{Spec: model.SpecV1, ID: "1", Type: model.ProcessHeartbeat, Time: time.UnixMilli(1234).UTC(),
		Pipeline: "p", System: model.Consumer, Component: "c", Attrs: map[string]string{"z": "1", "a": "2"}}
	b.Add(&e, Source{Topic: "t", Partition: 3, Offset: 9}, 5)
	cols := b.Columns()
	if got := cols[18].([][]string)[0]; len(got) != 2 || got[0] != "a" || got[1] != "z" {
		t.Errorf("attr keys not sorted: %v", got)
	}
	if v := cols[19].([][]string)[0]; len(v) != 2 || v[0] != "2" || v[1] != "1" {
		t.Errorf("attr values not in the keys' order: %v", v)
	}
	b.Reset()
	if b.Len() != 0 {
		t.Error("Reset kept rows")
	}
}

func TestDateColumn(t *testing.T) {
	if !DateColumn(model.Date{}).Equal(time.Unix(0, 0)) || !DateFromColumn(DateColumn(model.Date{})).IsZero() {
		t.Error("zero business date does not map to 1970-01-01 and back")
	}
	d := model.MustParseDate("2026-09-30")
	if DateFromColumn(DateColumn(d)) != d {
		t.Error("date round trip")
	}
	// The batch's seconds of a date are DateColumn's, for the zero date,
	// every day of the storable range and days carried past a month's end.
	dates := []model.Date{{}, {Year: 2026, Month: 2, Day: 31}, {Year: 1969, Month: 12, Day: 31}, {Year: 2106, Month: 1, Day: 1}}
	for day := model.MinBusinessDay; day <= model.MaxBusinessDay; day++ {
		dates = append(dates, model.DateFromDays(day))
	}
	for _, d := range dates {
		if got, want := dateSeconds(d), DateColumn(d).Unix(); got != want {
			t.Fatalf("dateSeconds(%v) = %d, DateColumn %d", d, got, want)
		}
	}
}

// TestRowsColumnCount: every row type has as many columns as its list
// names (the order and names are checked against the DDL by
// TestColumnsMatchDDL, and on the server by TestRowsInsert).
func TestRowsColumnCount(t *testing.T) {
	var (
		e EventBatch
		d DiagnosisRows
		f FindingRows
	)
	for _, tt := range []struct {
		table string
		cols  []any
	}{
		{Events, e.Columns()},
		{DeadLetters, DeadLetterColumnsOf(nil)},
		{Diagnoses, d.Columns()},
		{Findings, f.Columns()},
	} {
		if n := len(InsertColumns(tt.table)); n != len(tt.cols) {
			t.Errorf("%s: the column list names %d columns, the row type has %d", tt.table, n, len(tt.cols))
		}
	}
	if got, want := len(SplitColumns(EventReadColumns)), 20; got != want {
		t.Errorf("EventReadColumns names %d columns; ScanEvent scans %d", got, want)
	}
}

// manyAttrs returns an event with n attributes whose keys arrive in no
// particular order (a map), like a hostile but valid 256 KiB event.
func manyAttrs(n int) model.Event {
	attrs := make(map[string]string, n)
	for i := range n {
		attrs["k"+strconv.Itoa((i*7919)%n)] = "v"
	}
	return model.Event{Spec: model.SpecV1, ID: "1", Type: model.JobSucceeded, Time: time.UnixMilli(1234).UTC(),
		Pipeline: "p", BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "b", System: model.Producer, Attrs: attrs}
}

func TestAddSortsManyAttrs(t *testing.T) {
	e := manyAttrs(22000)
	var b EventBatch
	b.Add(&e, Source{}, 1)
	cols := b.Columns()
	keys, vals := cols[18].([][]string)[0], cols[19].([][]string)[0]
	if len(keys) != len(e.Attrs) || len(vals) != len(e.Attrs) {
		t.Fatalf("%d keys, %d values, want %d", len(keys), len(vals), len(e.Attrs))
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("keys %d and %d out of order: %q, %q", i-1, i, keys[i-1], keys[i])
		}
	}
}

// BenchmarkAddManyAttrs measures EventBatch.Add of an event with ~22,000
// attrs (a valid 256 KiB event): the attrs are sorted per event, so this
// is quadratic with an insertion sort and n log n with slices.Sort:
// 443 ms against 4.2 ms per event on the 2-core development machine
// (go test ./store/schema -run '^$' -bench AddManyAttrs -benchtime 20x).
func BenchmarkAddManyAttrs(b *testing.B) {
	e := manyAttrs(22000)
	var eb EventBatch
	for b.Loop() {
		eb.Reset()
		eb.Add(&e, Source{}, 1)
	}
}
