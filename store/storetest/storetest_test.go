package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
)

// TestNewDB: the database has every table of the schema, the sink writes
// into it, and the database is gone once the test that made it ends
// (HANDOFF_TEST_KEEP unset: it would keep it).
func TestNewDB(t *testing.T) {
	t.Setenv("HANDOFF_TEST_KEEP", "")
	conn := testenv.ClickHouse(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var db string
	t.Run("made", func(t *testing.T) {
		d := storetest.NewDB(t, "storetest")
		db = d.Name
		if d.Sink.Database() != db {
			t.Errorf("the sink writes to %s, want %s", d.Sink.Database(), db)
		}
		for _, table := range schema.AllTables() {
			var n uint64
			if err := d.Conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", db, table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("table %s.%s missing", db, table)
			}
		}
		var rows schema.DiagnosisRows
		rows.Add(schema.DiagnosisRow{Status: "delivered", Verdict: "delivered", Diagnosis: "{}"}, schema.Source{Topic: "t"}, 1)
		if err := d.Sink.InsertColumns(ctx, schema.Diagnoses, schema.DiagnosisColumns, rows.Columns()); err != nil {
			t.Fatalf("the sink: %v", err)
		}
		var n uint64
		if err := d.Conn.QueryRow(ctx, "SELECT count() FROM "+db+"."+schema.Diagnoses).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%d rows stored through the sink, want 1", n)
		}
	})
	if t.Failed() {
		return
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.databases WHERE name = ?", db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still there after its test ended", db)
	}
}
