package writer_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/writer"
)

// TestInsertEventsRoundTrip stores events over more than one block, with
// none, one and several attrs (the arrays are appended row by row), and
// reads every column back.
func TestInsertEventsRoundTrip(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "writer")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	sink, err := writer.New(conn, db)
	if err != nil {
		t.Fatal(err)
	}
	n := writer.BlockRows + 10
	want := map[string]model.Event{}
	var b schema.EventBatch
	for i := range n {
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("e%06d", i), Type: model.JobSucceeded,
			Time: time.Date(2026, 10, 1, 0, 0, 0, i%1000*int(time.Millisecond), time.UTC), Pipeline: fmt.Sprintf("p%d", i%7),
			BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930", System: model.Producer,
			Rows: int64(i), HasRows: i%2 == 0}
		switch i % 3 {
		case 1:
			e.Attrs = map[string]string{"k": fmt.Sprint(i)}
		case 2:
			e.Attrs = map[string]string{"a": "1", "b": "", "c": fmt.Sprint(i)}
		}
		want[e.ID] = e
		b.Add(&e, schema.Source{Topic: "t", Partition: 1, Offset: int64(i)}, 1)
	}
	if err := sink.InsertEvents(ctx, &b); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT "+schema.EventReadColumns+" FROM "+db+".events")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var s schema.EventScanner
	got := 0
	for rows.Next() {
		var e model.Event
		if err := s.Scan(rows, &e); err != nil {
			t.Fatal(err)
		}
		got++
		if w := want[e.ID]; !reflect.DeepEqual(e, w) {
			t.Fatalf("event %s read back as\n%+v\nwant\n%+v", e.ID, e, w)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("%d events read back, want %d", got, n)
	}
}
