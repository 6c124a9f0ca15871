package sink

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

func TestColumnsMatchColumnList(t *testing.T) {
	var b EventBatch
	e := model.Event{Spec: model.SpecV1, ID: "1", Type: model.ProcessHeartbeat, Time: time.UnixMilli(1234).UTC(),
		Pipeline: "p", System: model.Consumer, Component: "c", Attrs: map[string]string{"z": "1", "a": "2"}}
	b.Add(&e, Source{Topic: "t", Partition: 3, Offset: 9}, 5)
	cols := b.columns()
	if n := len(strings.Split(EventColumns, ",")); n != len(cols) {
		t.Fatalf("EventColumns names %d columns, batch has %d", n, len(cols))
	}
	if got := b.attrKeys[0]; len(got) != 2 || got[0] != "a" || got[1] != "z" {
		t.Errorf("attr keys not sorted: %v", got)
	}
	if !DateColumn(e.BusinessDate).Equal(time.Unix(0, 0)) || !DateFromColumn(DateColumn(e.BusinessDate)).IsZero() {
		t.Error("zero business date does not map to 1970-01-01 and back")
	}
	d := model.MustParseDate("2026-09-30")
	if DateFromColumn(DateColumn(d)) != d {
		t.Error("date round trip")
	}
	b.Reset()
	if b.Len() != 0 {
		t.Error("Reset kept rows")
	}
}
