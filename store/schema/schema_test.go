package schema_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
)

func TestStatements(t *testing.T) {
	stmts, err := schema.Statements("h")
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 11 {
		t.Fatalf("got %d statements, want 11: %q", len(stmts), stmts)
	}
	if _, err := schema.Statements("bad-name"); err == nil {
		t.Fatal("bad database name accepted")
	}
}

func TestCheckDatabase(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"handoff", true},
		{"_h2", true},
		{strings.Repeat("a", schema.MaxDatabaseLen), true},
		{"", false},
		{"db.events FINAL WHERE 1=1 --", false},
		{"h; DROP DATABASE handoff", false},
		{"h`x", false},
		{"h\nx", false},
		{"h\x00", false},
		{"1h", false},
		{"bad-name", false},
		{"ünï", false},
		{"h ", false},
		{strings.Repeat("a", schema.MaxDatabaseLen+1), false},
	}
	for _, tt := range tests {
		err := schema.CheckDatabase(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("CheckDatabase(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "database name") {
			t.Errorf("CheckDatabase(%q): error %q does not say what was wrong", tt.name, err)
		}
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
	for _, table := range schema.AllTables() {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", db, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("table %s.%s missing", db, table)
		}
	}
}
