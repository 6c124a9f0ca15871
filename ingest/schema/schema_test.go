package schema_test

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/internal/testenv"
)

func TestStatements(t *testing.T) {
	stmts, err := schema.Statements("h")
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 5 {
		t.Fatalf("got %d statements, want 5: %q", len(stmts), stmts)
	}
	if _, err := schema.Statements("bad-name"); err == nil {
		t.Fatal("bad database name accepted")
	}
}

func TestEnsureIdempotent(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "schema_test")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 2; i++ {
		if err := schema.Ensure(ctx, conn, db); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	for _, table := range []string{schema.Events, schema.DeadLetters, schema.Diagnoses, schema.Findings} {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", db, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("table %s.%s missing", db, table)
		}
	}
}
