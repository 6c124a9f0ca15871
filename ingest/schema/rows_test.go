package schema

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

func TestEventBatch(t *testing.T) {
	var b EventBatch
	e := model.Event{Spec: model.SpecV1, ID: "1", Type: model.ProcessHeartbeat, Time: time.UnixMilli(1234).UTC(),
		Pipeline: "p", System: model.Consumer, Component: "c", Attrs: map[string]string{"z": "1", "a": "2"}}
	b.Add(&e, Source{Topic: "t", Partition: 3, Offset: 9}, 5)
	if got := b.attrKeys[0]; len(got) != 2 || got[0] != "a" || got[1] != "z" {
		t.Errorf("attr keys not sorted: %v", got)
	}
	if v := b.attrValues[0]; len(v) != 2 || v[0] != "2" || v[1] != "1" {
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
